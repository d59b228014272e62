"""OAuth fixtures: settings that allow a loopback client ID document, a server for that document, the
real app with its lifespan, and helpers for the authorization-code flow with PKCE (S256)."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import secrets
import threading
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from http import server as http_server
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from fastapi import FastAPI

from proxyplane.core.settings import Settings
from proxyplane.platform import Platform
from proxyplane.storage.engine import Database
from tests.adapters.web.helpers import csrf_of, login
from tests.support import Account, make_account

BASE = "http://testserver"
MCP_URL = BASE + "/api/v1/mcp"
REDIRECT_URI = "http://127.0.0.1:33418/callback"


@pytest.fixture(scope="module")
def settings(tmp_path_factory: pytest.TempPathFactory, database_url: str) -> Settings:
    return Settings(
        home=tmp_path_factory.mktemp("oauth"),
        database_url=database_url,
        secret_key="test-secret-key",
        api_port=8000,
        public_base_url=BASE,
        oauth_allow_http_client_ids=True,
    )


@pytest.fixture(scope="module")
async def platform(settings: Settings) -> AsyncIterator[Platform]:
    """One platform, app and signed-in customer per module (the flows use fresh clients each)."""
    p = Platform(settings, Database(settings.resolved_database_url()))
    yield p
    await p.close()


@pytest.fixture(scope="module")
async def account(platform: Platform) -> Account:
    return await make_account(platform)


class _Documents(http_server.BaseHTTPRequestHandler):
    documents: dict[str, bytes] = {}

    def do_GET(self) -> None:  # noqa: N802
        if self.path.startswith("/callback"):  # a native client's loopback redirect target
            self.documents[self.path] = b'"the client got its code"'
        body = self.documents.get(self.path)
        self.send_response(200 if body is not None else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body or b"")))
        self.end_headers()
        self.wfile.write(body or b"")

    def log_message(self, *args: Any) -> None:
        pass


@dataclass
class DocumentServer:
    base: str

    def publish(self, path: str, document: dict[str, Any] | None = None, **fields: Any) -> str:
        """Serve a client ID metadata document at `path`; returns its URL (the client_id)."""
        url = self.base + path
        doc = (
            document
            if document is not None
            else {
                "client_id": url,
                "client_name": "Test Agent",
                "redirect_uris": [REDIRECT_URI],
                "grant_types": ["authorization_code", "refresh_token"],
                "response_types": ["code"],
                "token_endpoint_auth_method": "none",
                **fields,
            }
        )
        _Documents.documents[path] = json.dumps(doc).encode()
        return url


@pytest.fixture(scope="session")
def documents() -> Iterator[DocumentServer]:
    server = http_server.ThreadingHTTPServer(("127.0.0.1", 0), _Documents)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield DocumentServer(f"http://127.0.0.1:{server.server_address[1]}")
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
async def app(platform: Platform) -> AsyncIterator[FastAPI]:
    from proxyplane.app import create_app

    application = create_app(platform)
    async with application.router.lifespan_context(application):
        yield application


@pytest.fixture(scope="module")
async def http(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=app, client=("127.0.0.9", 50000))
    async with httpx.AsyncClient(transport=transport, base_url=BASE) as c:
        yield c


def pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
    return verifier, challenge


def query_of(location: str) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}


async def authorize(http: httpx.AsyncClient, client_id: str, challenge: str, **extra: str) -> httpx.Response:
    params = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": REDIRECT_URI,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "state": "st-1",
        "resource": MCP_URL,
        **extra,
    }
    return await http.get("/oauth/authorize", params=params)


async def consent(http: httpx.AsyncClient, account: Account, consent_url: str, **form: Any) -> dict[str, str]:
    """Sign in as `account` (if needed), answer the consent page; returns the redirect's query."""
    page = await http.get(consent_url)
    if page.status_code == 303 and page.headers["location"].startswith("/login"):
        assert (await login(http, account.email, account.password)).status_code == 303
        page = await http.get(consent_url)
    assert page.status_code == 200, page.text
    request_id = re.search(r'name="request" value="([^"]+)"', page.text)
    assert request_id
    data = {"csrf": csrf_of(page), "request": request_id.group(1), "action": "allow", **form}
    answered = await http.post("/oauth/consent", data=data)
    assert answered.status_code == 303, answered.text
    assert answered.headers["location"].startswith(REDIRECT_URI)
    return query_of(answered.headers["location"])


async def token(http: httpx.AsyncClient, **form: str) -> httpx.Response:
    return await http.post("/oauth/token", data=form)


async def full_flow(
    http: httpx.AsyncClient, documents: DocumentServer, account: Account, path: str, **form: Any
) -> tuple[str, dict[str, Any]]:
    """CIMD client, consent with `form`, code exchange; returns (client_id, token response)."""
    client_id = documents.publish(path)
    verifier, challenge = pkce()
    r = await authorize(http, client_id, challenge)
    assert r.status_code == 302, r.text
    answer = await consent(http, account, r.headers["location"], **form)
    assert answer["state"] == "st-1" and answer["iss"] == BASE
    t = await token(
        http,
        grant_type="authorization_code",
        code=answer["code"],
        redirect_uri=REDIRECT_URI,
        client_id=client_id,
        code_verifier=verifier,
        resource=MCP_URL,
    )
    assert t.status_code == 200, t.text
    return client_id, t.json()
