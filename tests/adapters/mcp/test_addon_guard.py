"""Issue 30.7 on MCP: buy_addon takes max_total_cents like every spending tool (expected_price_cents still
works, marked deprecated); a bogus OAuth access token is refused as one, not as an API key."""

from __future__ import annotations

import httpx
import pytest
from fastapi import FastAPI

from proxyplane.platform import Platform
from tests.adapters.mcp.conftest import MCP_URL, http_client, mcp_client
from tests.adapters.mcp.test_tools import INIT, MCP_HEADERS, text
from tests.adapters.rest.growth_support import API, balance, buy

pytestmark = pytest.mark.anyio


async def test_buy_addon_with_max_total_cents(
    app: FastAPI, rest: httpx.AsyncClient, platform: Platform
) -> None:
    b = await buy(rest, platform, country="LU", count=8, stock=10)
    offers = (await rest.get(f"{API}/billing/services/{b.sid}/addons/available", headers=b.headers)).json()
    price = next(o["price_cents"] for o in offers["items"] if o["addon_type"] == "extra_connections")
    bal = await balance(rest, b.key)
    args = {"service_id": b.sid, "addon_type": "extra_connections", "idempotency_key": "m1"}
    async with mcp_client(app, b.key) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        low = await client.call_tool("buy_addon", {**args, "max_total_cents": price - 1})
        ok = await client.call_tool("buy_addon", {**args, "max_total_cents": price})
    schema = tools["buy_addon"].input_schema
    assert schema["properties"]["expected_price_cents"]["deprecated"] is True
    assert {"required": ["max_total_cents"]} in schema["anyOf"]
    assert "max_total_cents is a price guard" in (tools["buy_addon"].description or "")
    assert (
        low.is_error
        and text(low).startswith("price_changed: ")
        and f"current_price_cents={price}" in text(low)
    )
    assert ok.is_error is False, text(ok)
    assert await balance(rest, b.key) == bal - price


async def test_a_bogus_oauth_token_is_named_as_one(app: FastAPI) -> None:
    async with http_client(app, "ppo_at_bogus") as hc:
        r = await hc.post(MCP_URL, json=INIT, headers=MCP_HEADERS)
    assert r.status_code == 401
    assert (
        r.json()["detail"]["message"]
        == "invalid, expired or revoked OAuth access token: refresh it or authorize again"
    )
