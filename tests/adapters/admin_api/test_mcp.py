"""The operator MCP endpoint at /api/admin/v1/mcp (issue 33) through the official MCP client (Streamable
HTTP over the real app): exactly the operator API's operations as tools, with their permissions; a role
without the permission gets the refusal naming it (and an audit row); a credit with an idempotency_key
sent twice credits once; the audit log names the door; no key is 401."""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import AsyncIterator

import httpx2
import pytest
from fastapi import FastAPI
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import TextContent

from proxyplane.operations import REGISTRY
from proxyplane.ops import served
from proxyplane.platform import Platform
from tests.domains.operators.helpers import make_operator, run
from tests.support import Account, bearer

pytestmark = pytest.mark.anyio
URL = "http://127.0.0.1/api/admin/v1/mcp"


@pytest.fixture
async def app(platform: Platform) -> AsyncIterator[FastAPI]:
    from proxyplane.app import create_app

    application = create_app(platform)
    async with application.router.lifespan_context(application):
        yield application


def http(app: FastAPI, key: str | None) -> httpx2.AsyncClient:
    transport = httpx2.ASGITransport(app=app, client=("127.0.0.7", 50000))
    return httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1", headers=bearer(key))


@contextlib.asynccontextmanager
async def operator_client(app: FastAPI, key: str) -> AsyncIterator[Client]:
    async with http(app, key) as hc, Client(streamable_http_client(URL, http_client=hc)) as client:
        yield client


def text(result: object) -> str:
    return " ".join(c.text for c in getattr(result, "content", []) if isinstance(c, TextContent))


async def test_tools_are_the_operator_api(app: FastAPI, platform: Platform) -> None:
    _, _, key = await make_operator(platform, "viewer")
    async with operator_client(app, key) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    api = served("admin_api", REGISTRY)
    assert set(tools) == set(api)
    for name, op in api.items():
        tool = tools[name]
        assert tool.meta and tool.meta["proxyplane/permission"] == op.permission, name
        assert f"Permission: {op.permission}" in (tool.description or "")
        assert tool.annotations and tool.annotations.read_only_hint == (op.effect == "read"), name
        properties = set(tool.input_schema.get("properties", {}))
        assert set(op.input.model_json_schema().get("properties", {})) <= properties, name  # type: ignore[union-attr]
        assert ("idempotency_key" in properties) == (op.effect != "read"), name


async def test_refusal_names_the_permission_and_is_audited(
    app: FastAPI, platform: Platform, account: Account
) -> None:
    viewer, _, key = await make_operator(platform, "viewer")
    async with operator_client(app, key) as client:
        found = await client.call_tool("operator_customer_search", {"query": account.email})
        assert found.is_error is False, text(found)
        assert [c["customer_id"] for c in json.loads(text(found))["customers"]] == [account.customer_id]
        refused = await client.call_tool(
            "operator_wallet_credit", {"email": account.email, "cents": 500, "reason": "agent"}
        )
    assert refused.is_error and "forbidden" in text(refused) and '"wallet.credit"' in text(refused)
    shown = await run(platform, "operator_show_customer", email=account.email)
    assert shown["balance_cents"] == 0
    (row,) = (await run(platform, "operator_audit_list", actor=viewer, outcome="refused"))["entries"]
    assert row["door"] == "admin_mcp" and row["action"] == "operator_wallet_credit"
    assert row["after"]["missing_permission"] == "wallet.credit"


async def test_credit_once_per_key_and_audited(app: FastAPI, platform: Platform, account: Account) -> None:
    finance, _, key = await make_operator(platform, "finance")
    once = uuid.uuid4().hex
    move = {"email": account.email, "cents": 1250, "reason": "agent goodwill", "idempotency_key": once}
    async with operator_client(app, key) as client:
        first = await client.call_tool("operator_wallet_credit", move)
        assert first.is_error is False, text(first)
        assert first.structured_content == {"email": account.email, "balance_cents": 1250}
        again = await client.call_tool("operator_wallet_credit", move)
        assert again.is_error and "already_applied" in text(again)
        other = await client.call_tool("operator_wallet_credit", {**move, "idempotency_key": "another"})
        assert other.is_error is False and json.loads(text(other))["balance_cents"] == 2500
        wrong = await client.call_tool("operator_wallet_credit", {"email": account.email, "cents": "x"})
        assert wrong.is_error
    assert (await run(platform, "operator_show_customer", email=account.email))["balance_cents"] == 2500
    rows = (await run(platform, "operator_audit_list", actor=finance, action="operator_wallet_credit"))[
        "entries"
    ]
    assert [(r["door"], r["role"], r["target"]) for r in rows] == [
        ("admin_mcp", "finance", f"customer:{account.customer_id}")
    ] * 2


async def test_no_key_or_a_customer_key_is_401(app: FastAPI, account: Account) -> None:
    for key in (None, await account.key(), "ppo_not-a-key"):
        async with http(app, key) as hc:
            answer = await hc.post(URL, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        assert answer.status_code == 401 and answer.json()["detail"]["error"] == "unauthorized"
