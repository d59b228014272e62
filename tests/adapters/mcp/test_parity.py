"""REST and MCP serve the same operations: every registry operation has a REST route and (unless
mcp=False) an MCP tool, both publish and enforce the same scopes, and reads give the same data."""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from proxyplane.adapters.rest.app import API_PREFIX
from proxyplane.core.scopes import ALL_SCOPES
from proxyplane.operations import REGISTRY
from proxyplane.ops import Auth, Effect, Operation, served
from tests.adapters.mcp.conftest import mcp_client
from tests.adapters.mcp.test_tools import text
from tests.support import Account, bearer

pytestmark = pytest.mark.anyio

# fields that describe the channel itself rather than the data
CHANNEL_FIELDS = {"channel", "user_agent"}


def no_required_input(op: Operation) -> bool:
    return op.input is None or not any(f.is_required() for f in op.input.model_fields.values())


def rest_scopes(openapi: dict[str, Any], op: Operation) -> list[str]:
    operation = openapi["paths"][API_PREFIX + op.path][op.method.lower()]
    found = re.search(r"scopes: ([^;]+);", operation["description"])
    assert found, op.name
    return [] if found.group(1) == "none" else found.group(1).split(", ")


async def test_every_operation_has_a_route_and_a_tool_with_the_same_scopes(
    app: FastAPI, rest: httpx.AsyncClient, account: Account
) -> None:
    openapi = (await rest.get(f"{API_PREFIX}/openapi.json")).json()
    async with mcp_client(app, await account.key()) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert served("rest") == {n: op for n, op in REGISTRY.items() if "rest" in op.doors}
    for op in served("rest").values():
        route = openapi["paths"][API_PREFIX + op.path][op.method.lower()]
        assert route["operationId"] == op.name
        if not op.mcp:
            assert op.name not in tools
            continue
        meta = tools[op.name].meta or {}
        assert meta["proxyplane/scopes"] == rest_scopes(openapi, op) == sorted(op.scopes), op.name


async def test_every_spending_tool_requires_an_idempotency_key_and_a_price_guard(
    app: FastAPI, account: Account
) -> None:
    async with mcp_client(app, await account.key()) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    spending = [op for op in served("mcp").values() if op.effect == Effect.SPENDS_MONEY]
    assert {
        "order_composite",
        "create_service",
        "renew_service",
        "resume_service",
        "add_ips",
        "buy_addon",
    } | {"refresh_ips"} <= {op.name for op in spending}
    for op in spending:
        tool = tools[op.name]  # every spending operation is served (none dropped for lack of a key)
        required = set(tool.input_schema.get("required", []))
        assert "idempotency_key" in required, op.name
        # a price guard is required: max_total_cents, or (buy_addon) one of it and the deprecated
        # expected_price_cents (anyOf), issue 30.7
        one_of = [set(a.get("required", [])) for a in tool.input_schema.get("anyOf", [])]
        assert "max_total_cents" in required or {"max_total_cents"} in one_of, op.name
        assert (tool.meta or {})["proxyplane/effect"] == "spends_money"
        assert tool.annotations is not None and tool.annotations.read_only_hint is False
        assert "use_balance" not in tool.input_schema["properties"], op.name
    # and nothing that is not declared spending asks for a price guard
    for name, tool in tools.items():
        if (tool.meta or {})["proxyplane/effect"] != "spends_money":
            assert "max_total_cents" not in tool.input_schema.get("properties", {}), name


async def test_both_channels_refuse_the_same_missing_scope(
    app: FastAPI, rest: httpx.AsyncClient, account: Account
) -> None:
    checked = 0
    for op in REGISTRY.values():
        if not op.mcp or op.auth != Auth.KEY or not op.scopes or not no_required_input(op):
            continue
        lacking = sorted(op.scopes)[0]
        key = await account.key(ALL_SCOPES - {lacking})
        body: dict[str, Any] | None = None if op.method in ("GET", "DELETE") or op.input is None else {}
        response = await rest.request(op.method, API_PREFIX + op.path, headers=bearer(key), json=body)
        assert response.status_code == 403, op.name
        assert response.json()["detail"]["missing_scopes"] == [lacking]
        async with mcp_client(app, key) as client:
            result = await client.call_tool(op.name, {})
        assert result.is_error is True, op.name
        assert text(result).startswith("missing_scope: ") and lacking in text(result), op.name
        checked += 1
    assert checked >= 4


async def test_reads_give_the_same_result_on_both_channels(
    app: FastAPI, rest: httpx.AsyncClient, account: Account
) -> None:
    await account.credit(2500)
    key = await account.key()
    reads = [op for op in REGISTRY.values() if op.mcp and op.effect == Effect.READ and no_required_input(op)]
    assert {"get_balance", "get_ledger", "get_profile", "list_api_keys", "whoami"} <= {
        op.name for op in reads
    }
    async with mcp_client(app, key) as client:
        # warm-up: the key's first use records its last-use time, which list_api_keys shows
        await client.call_tool("get_balance", {})
        for op in reads:
            result = await client.call_tool(op.name, {})
            response = await rest.request(op.method, API_PREFIX + op.path, headers=bearer(key))
            assert response.status_code == 200, op.name
            assert result.is_error is False, (op.name, text(result))
            over_mcp = result.structured_content
            over_rest = response.json()
            assert over_mcp is not None
            if isinstance(over_rest, list):
                assert list(over_mcp) == ["items"], op.name
                over_mcp = over_mcp["items"]
            if isinstance(over_rest, dict) and CHANNEL_FIELDS <= set(over_rest):
                assert over_mcp["channel"] == "mcp" and over_rest["channel"] == "rest"
                over_mcp = {k: v for k, v in over_mcp.items() if k not in CHANNEL_FIELDS}
                over_rest = {k: v for k, v in over_rest.items() if k not in CHANNEL_FIELDS}
            assert over_mcp == over_rest, op.name
