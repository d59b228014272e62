"""The MCP server over real Streamable HTTP framing: tools generated from the registry, auth, scopes."""

from __future__ import annotations

import uuid

import pytest
from fastapi import FastAPI
from mcp_types import TextContent

from proxyplane.adapters.mcp.tools import MAX_TOTAL, forced_arguments, needs_max_total, served_operations
from proxyplane.operations import REGISTRY
from proxyplane.ops import Effect
from tests.adapters.mcp.conftest import CLIENT_IP, MCP_URL, http_client, mcp_client
from tests.support import Account

pytestmark = pytest.mark.anyio

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"},
    },
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def text(result: object) -> str:
    content = getattr(result, "content", [])
    return " ".join(c.text for c in content if isinstance(c, TextContent))


async def test_every_registry_operation_is_a_tool_with_its_schema_and_annotations(
    app: FastAPI, account: Account
) -> None:
    async with mcp_client(app, await account.key()) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    expected = {op.name for op in REGISTRY.values() if op.mcp}
    assert set(tools) == expected
    assert {"whoami", "get_balance", "init_deposit", "get_profile"} <= set(tools)
    for op in served_operations(REGISTRY):
        tool = tools[op.name]
        props = set(tool.input_schema.get("properties", {}))
        fields = set(op.input.model_fields) if op.input else set()
        fields -= set(forced_arguments(op))
        if needs_max_total(op):
            fields.add(MAX_TOTAL)
        assert props == fields, op.name
        assert tool.input_schema.get("additionalProperties") is False
        assert op.summary in (tool.description or "")
        for scope in op.scopes:
            assert scope in (tool.description or "")
        ann = tool.annotations
        assert ann is not None
        assert ann.read_only_hint is (op.effect == Effect.READ)
        assert ann.idempotent_hint is op.idempotent
        assert ann.open_world_hint is False
        if op.output is None:
            assert tool.output_schema is None
        else:
            assert tool.output_schema is not None and tool.output_schema["type"] == "object"
    assert tools["revoke_api_key"].annotations.destructive_hint is True  # type: ignore[union-attr]
    assert tools["get_balance"].annotations.destructive_hint is False  # type: ignore[union-attr]
    assert tools["init_deposit"].input_schema["required"] == [
        "amount_cents",
        "payment_method",
        "idempotency_key",
    ]


async def test_read_tool_returns_structured_content(app: FastAPI, account: Account) -> None:
    await account.credit(1234)
    async with mcp_client(app, await account.key({"wallet:read"})) as client:
        result = await client.call_tool("get_balance", {})
        ledger = await client.call_tool("get_ledger", {"limit": 5})
    assert result.is_error is False
    assert result.structured_content == {"balance_cents": 1234, "currency": "USD"}
    assert '"balance_cents": 1234' in text(result)
    assert ledger.structured_content is not None
    assert ledger.structured_content["total"] == 1
    assert ledger.structured_content["items"][0]["amount_cents"] == 1234


async def test_list_output_is_wrapped_in_an_object(app: FastAPI, account: Account) -> None:
    key = await account.key({"customer:read"}, name="agent key")
    async with mcp_client(app, key) as client:
        result = await client.call_tool("list_api_keys", {})
    assert result.structured_content is not None
    names = [k["name"] for k in result.structured_content["items"]]
    assert names == ["agent key"]


async def test_missing_key_and_bad_key_are_401(app: FastAPI, account: Account) -> None:
    async with http_client(app, None) as hc:
        bare = await hc.post("/api/v1/mcp", json=INIT, headers=MCP_HEADERS)
        slash = await hc.post("/api/v1/mcp/", json=INIT, headers=MCP_HEADERS)
        wrong = await hc.post(
            "/api/v1/mcp", json=INIT, headers={**MCP_HEADERS, "Authorization": "Bearer ppk_nope"}
        )
    for response in (bare, slash, wrong):
        assert response.status_code == 401
        assert response.headers["www-authenticate"].startswith("Bearer")
        assert response.json()["detail"]["error"] == "unauthorized"
    good_key = await account.key()
    async with http_client(app, good_key) as hc:
        ok = await hc.post("/api/v1/mcp", json=INIT, headers=MCP_HEADERS)
    assert ok.status_code == 200


async def test_revoked_key_is_refused_at_once(app: FastAPI, account: Account) -> None:
    key = await account.key({"customer:read", "customer:write"})
    async with mcp_client(app, key) as client:
        keys = await client.call_tool("list_api_keys", {})
        assert keys.structured_content is not None
        key_id = keys.structured_content["items"][0]["key_id"]
        revoked = await client.call_tool("revoke_api_key", {"key_id": key_id})
        assert revoked.is_error is False
    async with http_client(app, key) as hc:
        after = await hc.post(MCP_URL, json=INIT, headers=MCP_HEADERS)
    assert after.status_code == 401
    assert after.json()["detail"]["message"] == "invalid or revoked API key"


async def test_missing_scope_is_an_error_result_naming_it_and_nothing_happens(
    app: FastAPI, account: Account
) -> None:
    reader = await account.key({"customer:read"})
    async with mcp_client(app, reader) as client:
        refused = await client.call_tool("update_profile", {"name": "Changed By Agent"})
        profile = await client.call_tool("get_profile", {})
    assert refused.is_error is True
    assert "missing_scope" in text(refused)
    assert "customer:write" in text(refused)
    assert profile.structured_content is not None
    assert profile.structured_content["name"] == "Test User"


async def test_domain_errors_are_readable_error_results(app: FastAPI, account: Account) -> None:
    key = await account.key({"wallet:read", "wallet:deposit"})
    async with mcp_client(app, key) as client:
        missing = await client.call_tool("get_deposit", {"deposit_id": str(uuid.uuid4())})
        too_small = await client.call_tool(
            "init_deposit", {"amount_cents": 1, "payment_method": "card", "idempotency_key": "k1"}
        )
        bad_args = await client.call_tool("get_ledger", {"limit": 500})
    assert missing.is_error and text(missing).startswith("not_found: ")
    assert too_small.is_error and text(too_small).startswith("validation_error: amount_cents must be between")
    assert bad_args.is_error and "less than or equal to 200" in text(bad_args)
    for result in (missing, too_small, bad_args):
        assert "Traceback" not in text(result)


async def test_whoami_reports_key_and_connecting_ip(app: FastAPI, account: Account) -> None:
    key = await account.key({"wallet:read"}, name="my agent")
    async with mcp_client(app, key) as client:
        result = await client.call_tool("whoami", {})
    me = result.structured_content
    assert me is not None
    assert me["client_ip"] == CLIENT_IP
    assert me["channel"] == "mcp"
    assert me["key_name"] == "my agent"
    assert me["scopes"] == ["wallet:read"]
    assert me["customer_id"] == account.customer_id
    assert me["user_agent"] == "mcp-test-agent"
