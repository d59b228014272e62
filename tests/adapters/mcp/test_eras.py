"""Both MCP protocol eras against /api/v1/mcp with the official Python SDK client (issue 21.1): the
2025-11-25 initialize handshake ("legacy") and the stateless 2026-07-28 core (`server/discover`,
version and capabilities per request)."""

from __future__ import annotations

import pytest
from fastapi import FastAPI

from tests.adapters.mcp.conftest import ERAS, mcp_client
from tests.adapters.mcp.test_orders import MIX
from tests.adapters.mcp.test_tools import text
from tests.support import Account

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("mode", ERAS)
async def test_list_quote_and_scope_refusal_in_each_era(app: FastAPI, account: Account, mode: str) -> None:
    async with mcp_client(app, await account.key({"catalog:read"}), mode=mode) as client:
        expected = "2025-11-25" if mode == "legacy" else "2026-07-28"
        assert client.protocol_version == expected
        tools = {t.name for t in (await client.list_tools()).tools}
        quote = await client.call_tool("quote_composite", MIX)
        refused = await client.call_tool("get_balance", {})
    assert {"quote_composite", "order_composite", "whoami"} <= tools
    assert quote.is_error is False, text(quote)
    assert quote.structured_content is not None and quote.structured_content["total_cents"] > 0
    assert refused.is_error is True and text(refused).startswith("missing_scope: ")


@pytest.mark.parametrize("mode", ERAS)
async def test_tool_subsets_by_group_and_by_granted_scopes(app: FastAPI, account: Account, mode: str) -> None:
    key = await account.key({"usage:read", "services:read"})
    async with mcp_client(app, key, mode=mode, query="?tools=usage,proxy") as client:
        grouped = {t.name: t for t in (await client.list_tools()).tools}
        outside = await client.call_tool("get_balance", {})
    async with mcp_client(app, key, mode=mode, query="?tools=usage,wallet&scopes=granted") as client:
        granted = {t.name for t in (await client.list_tools()).tools}
    groups = {g for t in grouped.values() for g in (t.meta or {})["proxyplane/groups"]}
    assert "get_service_usage" in grouped and "get_proxy_auth" in grouped and "get_balance" not in grouped
    assert groups >= {"usage", "proxy"} and all(
        {"usage", "proxy"} & set((t.meta or {})["proxyplane/groups"]) for t in grouped.values()
    )
    assert outside.is_error is True and text(outside).startswith("tool_not_in_subset: get_balance")
    assert "get_service_usage" in granted and not {"get_balance", "init_deposit"} & granted
