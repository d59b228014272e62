"""OAuth 2.1 for MCP through the real app: metadata documents, the 401 challenge, CIMD + consent + PKCE,
tool calls with the token through the official MCP client (scopes of the grant enforced), refresh
rotation (replay ends the grant), RFC 7009 revocation refused at once, wrong audience, dashboard list."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import httpx2
import pytest
from fastapi import FastAPI
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import TextContent
from sqlalchemy import select

from proxyplane.domains.oauth import service
from proxyplane.platform import Platform
from proxyplane.storage.models.webhooks import Event
from tests.adapters.oauth.conftest import (
    BASE,
    MCP_URL,
    REDIRECT_URI,
    DocumentServer,
    authorize,
    consent,
    full_flow,
    pkce,
    query_of,
    token,
)
from tests.adapters.web.helpers import csrf_of
from tests.support import Account, bearer

pytestmark = pytest.mark.anyio
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}


@contextlib.asynccontextmanager
async def mcp_client(app: FastAPI, access_token: str) -> AsyncIterator[Client]:
    transport = httpx2.ASGITransport(app=app, client=("127.0.0.9", 50000))
    async with httpx2.AsyncClient(transport=transport, base_url=BASE, headers=bearer(access_token)) as hc:
        async with Client(streamable_http_client(MCP_URL, http_client=hc)) as client:
            yield client


def text(result: Any) -> str:
    return " ".join(c.text for c in result.content if isinstance(c, TextContent))


async def mcp_status(http: httpx.AsyncClient, access_token: str) -> int:
    r = await http.post("/api/v1/mcp", json=INIT, headers={**MCP_HEADERS, **bearer(access_token)})
    return r.status_code


async def test_metadata_documents_and_the_401_challenge(http: httpx.AsyncClient) -> None:
    r = await http.post("/api/v1/mcp", json=INIT, headers=MCP_HEADERS)
    assert r.status_code == 401
    prm_url = BASE + "/.well-known/oauth-protected-resource/api/v1/mcp"
    assert r.headers["www-authenticate"] == f'Bearer resource_metadata="{prm_url}"'
    bad = await http.post("/api/v1/mcp", json=INIT, headers={**MCP_HEADERS, **bearer("ppo_at_nope")})
    assert bad.headers["www-authenticate"].startswith('Bearer error="invalid_token", resource_metadata=')
    for path in ("/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/api/v1/mcp"):
        prm = (await http.get(path)).json()
        assert prm["resource"] == MCP_URL
        assert prm["authorization_servers"] == [BASE]
        assert "wallet:spend" in prm["scopes_supported"]
    meta = (await http.get("/.well-known/oauth-authorization-server")).json()
    assert meta["issuer"] == BASE
    assert meta["authorization_endpoint"] == BASE + "/oauth/authorize"
    assert meta["token_endpoint"] == BASE + "/oauth/token"
    assert meta["revocation_endpoint"] == BASE + "/oauth/revoke"
    assert meta["code_challenge_methods_supported"] == ["S256"]
    assert meta["client_id_metadata_document_supported"] is True
    assert "none" in meta["token_endpoint_auth_methods_supported"]


async def test_consent_grant_scopes_refresh_rotation_and_revocation(
    app: FastAPI, http: httpx.AsyncClient, documents: DocumentServer, account: Account
) -> None:
    client_id, tokens = await full_flow(
        http, documents, account, f"/agent-{uuid.uuid4().hex}.json", scopes=["customer:read"]
    )
    assert tokens["scope"] == "customer:read" and tokens["expires_in"] == service.ACCESS_SECONDS
    access, refresh = tokens["access_token"], tokens["refresh_token"]
    async with mcp_client(app, access) as client:
        profile = await client.call_tool("get_profile", {})
        refused = await client.call_tool("get_balance", {})
    assert profile.is_error is False and profile.structured_content is not None
    assert profile.structured_content["email"] == account.email
    assert refused.is_error is True and "missing_scope" in text(refused) and "wallet:read" in text(refused)
    async with app.state.platform.db.unit_of_work(write=False) as uow:  # the event shows the final prefix
        created = await uow.session.scalars(
            select(Event.data).where(
                Event.customer_id == account.customer_id, Event.type == "api_key.created"
            )
        )
        assert [d["prefix"] for d in created] == [service.GRANT_KEY_PREFIX]

    # refresh: a new pair, the old refresh token is spent; replaying it ends the grant
    rotated = await token(http, grant_type="refresh_token", refresh_token=refresh, client_id=client_id)
    assert rotated.status_code == 200, rotated.text
    new = rotated.json()
    assert new["refresh_token"] != refresh and new["access_token"] != access
    assert await mcp_status(http, new["access_token"]) == 200
    replay = await token(http, grant_type="refresh_token", refresh_token=refresh, client_id=client_id)
    assert replay.status_code == 400 and replay.json()["error"] == "invalid_grant"
    assert await mcp_status(http, new["access_token"]) == 401

    # a second grant, revoked through RFC 7009: refused at once
    _, again = await full_flow(
        http, documents, account, f"/agent-{uuid.uuid4().hex}.json", scopes=["customer:read"]
    )
    assert await mcp_status(http, again["access_token"]) == 200
    revoked = await http.post("/oauth/revoke", data={"token": again["refresh_token"], "client_id": client_id})
    assert revoked.status_code == 200  # another client's token: nothing happens (RFC 7009 answers 200)
    assert await mcp_status(http, again["access_token"]) == 200
    own_client = (await http.get("/keys")).text  # signed in: the dashboard lists the grant
    assert "Test Agent" in own_client
    grants = await _grants(app.state.platform, account)
    revoked = await http.post(
        "/oauth/revoke", data={"token": again["access_token"], "client_id": grants[0].client_id}
    )
    assert revoked.status_code == 200
    assert await mcp_status(http, again["access_token"]) == 401
    refused_refresh = await token(
        http, grant_type="refresh_token", refresh_token=again["refresh_token"], client_id=grants[0].client_id
    )
    assert refused_refresh.status_code == 400


async def _grants(platform: Platform, account: Account) -> list[service.GrantView]:
    async with platform.db.unit_of_work(write=False) as uow:
        return await service.list_grants(uow.session, account.customer_id)


async def test_pkce_failures_and_single_use_code(
    http: httpx.AsyncClient, documents: DocumentServer, account: Account
) -> None:
    client_id = documents.publish(f"/pkce-{uuid.uuid4().hex}.json")
    verifier, challenge = pkce()
    plain = await authorize(http, client_id, challenge, code_challenge_method="plain")
    assert plain.status_code == 302 and query_of(plain.headers["location"])["error"] == "invalid_request"
    no_challenge = await http.get(
        "/oauth/authorize",
        params={"response_type": "code", "client_id": client_id, "redirect_uri": REDIRECT_URI, "state": "s"},
    )
    assert query_of(no_challenge.headers["location"])["error"] == "invalid_request"
    r = await authorize(http, client_id, challenge)
    answer = await consent(http, account, r.headers["location"], scopes=["customer:read"])
    exchange = {
        "grant_type": "authorization_code",
        "code": answer["code"],
        "redirect_uri": REDIRECT_URI,
        "client_id": client_id,
    }
    wrong = await token(http, **exchange, code_verifier=pkce()[0])
    assert wrong.status_code == 400 and wrong.json() == {
        "error": "invalid_grant",
        "error_description": "incorrect code_verifier",
    }
    assert (await token(http, **exchange, code_verifier=verifier)).status_code == 200
    second = await token(http, **exchange, code_verifier=verifier)
    assert second.status_code == 400 and second.json()["error"] == "invalid_grant"


async def test_wrong_audience_is_refused(
    app: FastAPI, http: httpx.AsyncClient, documents: DocumentServer, account: Account
) -> None:
    client_id = documents.publish(f"/aud-{uuid.uuid4().hex}.json")
    _, challenge = pkce()
    other = await authorize(http, client_id, challenge, resource="http://other.example/mcp")
    assert other.status_code == 302
    assert query_of(other.headers["location"])["error"] == "invalid_target"
    # a token bound to another resource (as another server of this issuer would hold) is refused here
    platform: Platform = app.state.platform
    async with platform.db.unit_of_work() as uow:
        request_id = await service.start_request(
            uow.session, client_id, REDIRECT_URI, True, None, challenge, [], "http://testserver/api/v2/other"
        )
        row, code = await service.approve(
            uow.session, request_id, account.customer_id, "x", frozenset({"customer:read"}), None, None, False
        )
        issued = await service.exchange_code(uow.session, code)
        await uow.commit()
    assert issued is not None
    assert await mcp_status(http, issued.access_token) == 401


async def test_unacceptable_client_documents_are_refused(
    http: httpx.AsyncClient, documents: DocumentServer
) -> None:
    _, challenge = pkce()
    path = f"/bad-{uuid.uuid4().hex}.json"
    mismatched = documents.publish(
        path, {"client_id": "https://elsewhere.example/c.json", "redirect_uris": [REDIRECT_URI]}
    )
    r = await authorize(http, mismatched, challenge)
    assert r.status_code == 400 and "not found" in r.json()["error_description"]
    secret = documents.publish(
        f"/secret-{uuid.uuid4().hex}.json", token_endpoint_auth_method="client_secret_post"
    )
    assert (await authorize(http, secret, challenge)).status_code == 400
    unknown_redirect = documents.publish(f"/redir-{uuid.uuid4().hex}.json")
    r = await authorize(http, unknown_redirect, challenge, redirect_uri="http://127.0.0.1:1/evil")
    assert r.status_code == 400 and "not registered" in r.json()["error_description"]


async def test_dashboard_lists_and_revokes_a_grant_and_consent_can_deny(
    http: httpx.AsyncClient, documents: DocumentServer, account: Account, platform: Platform
) -> None:
    _, tokens = await full_flow(
        http,
        documents,
        account,
        f"/dash-{uuid.uuid4().hex}.json",
        preset="buyer",
        spend_limit_daily="12.50",
        confirm_spending="1",
    )
    page = await http.get("/keys")
    section = page.text[page.text.index('id="oauth-clients"') :]
    assert "Test Agent" in section and "wallet:spend" in section
    assert "OAuth: Test Agent" not in page.text  # the grant's key row is not listed among the keys
    grants = await _grants(platform, account)
    assert grants[0].confirm_spending is True
    principal = await service.authenticate_token(
        platform.db,
        tokens["access_token"],
        MCP_URL,
    )
    assert principal is not None and principal.confirm_spending is True and "wallet:spend" in principal.scopes
    forged = await http.post(f"/oauth/grants/{grants[0].grant_id}/revoke", data={"csrf": "forged"})
    assert forged.status_code == 403 and await mcp_status(http, tokens["access_token"]) == 200
    revoked = await http.post(f"/oauth/grants/{grants[0].grant_id}/revoke", data={"csrf": csrf_of(page)})
    assert revoked.status_code == 303
    assert await mcp_status(http, tokens["access_token"]) == 401
    assert str(grants[0].grant_id) not in (await http.get("/keys")).text

    client_id = documents.publish(f"/deny-{uuid.uuid4().hex}.json")
    _, challenge = pkce()
    r = await authorize(http, client_id, challenge)
    page = await http.get(r.headers["location"])
    request_id = page.text.split('name="request" value="')[1].split('"')[0]
    no_csrf = await http.post(
        "/oauth/consent", data={"request": request_id, "action": "allow", "scopes": "x"}
    )
    assert no_csrf.status_code == 403  # the consent form carries the dashboard's CSRF token like every form
    denied = await http.post(
        "/oauth/consent", data={"csrf": csrf_of(page), "request": request_id, "action": "deny"}
    )
    assert denied.status_code == 303
    assert query_of(denied.headers["location"])["error"] == "access_denied"


async def test_dynamic_registration_with_a_secret_stored_encrypted(
    http: httpx.AsyncClient, account: Account, platform: Platform
) -> None:
    from proxyplane.storage.models.oauth import OAuthClient

    registered = await http.post(
        "/oauth/register",
        json={"redirect_uris": [REDIRECT_URI], "client_name": "Registered Agent"},
    )
    assert registered.status_code == 201, registered.text
    client = registered.json()
    assert client["token_endpoint_auth_method"] == "client_secret_post" and client["client_secret"]
    async with platform.db.unit_of_work(write=False) as uow:
        row = await uow.session.get(OAuthClient, client["client_id"])
    assert row is not None and row.kind == "dcr" and client["client_secret"] not in row.document
    verifier, challenge = pkce()
    r = await authorize(http, client["client_id"], challenge)
    answer = await consent(http, account, r.headers["location"], scopes=["catalog:read"])
    exchange = {
        "grant_type": "authorization_code",
        "code": answer["code"],
        "redirect_uri": REDIRECT_URI,
        "client_id": client["client_id"],
        "code_verifier": verifier,
    }
    without_secret = await token(http, **exchange)
    assert without_secret.status_code == 401 and without_secret.json()["error"] == "invalid_client"
    issued = await token(http, **exchange, client_secret=client["client_secret"])
    assert issued.status_code == 200 and issued.json()["scope"] == "catalog:read"
