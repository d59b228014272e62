"""An agent buys over MCP: countries -> quote -> order with a price guard, from the balance only."""

from __future__ import annotations

import uuid

import pytest
from fastapi import FastAPI

from proxyplane.platform import Platform
from tests.adapters.mcp.conftest import mcp_client
from tests.adapters.mcp.test_tools import text
from tests.domains.stock.support import fresh_stock
from tests.support import Account

pytestmark = pytest.mark.anyio
MIX = {
    "product_kind": "proxy_datacenter",
    "period_months": 1,
    "segments": [{"country": "IS", "count": 8}],
    "geo_source": "maxmind",
}


async def balance(account: Account) -> int:
    from proxyplane.domains.wallet.service import balance as wallet_balance

    async with account.platform.db.unit_of_work(write=False) as uow:
        return await wallet_balance(uow.session, account.customer_id)


async def test_agent_orders_from_balance_with_price_guard(
    app: FastAPI, platform: Platform, account: Account
) -> None:
    await fresh_stock(platform, "proxy_datacenter", "IS", 10)
    await account.credit(100_000)
    order = {**MIX, "whitelist_ips": ["127.0.0.9"], "idempotency_key": uuid.uuid4().hex}
    async with mcp_client(app, await account.key()) as client:
        countries = await client.call_tool("list_countries", {})
        assert countries.structured_content is not None
        quote = await client.call_tool("quote_composite", MIX)
        assert quote.structured_content is not None
        total = quote.structured_content["total_cents"]
        low = await client.call_tool("order_composite", {**order, "max_total_cents": total - 1})
        assert low.is_error and text(low).startswith(f"price_changed: this call would charge {total} cents")
        assert await balance(account) == 100_000
        ok = await client.call_tool("order_composite", {**order, "max_total_cents": total})
        again = await client.call_tool("order_composite", {**order, "max_total_cents": total})
    assert ok.is_error is False, text(ok)
    assert ok.structured_content is not None
    assert ok.structured_content["amount_due_cents"] == 0 and ok.structured_content["checkout_url"] is None
    assert again.structured_content == ok.structured_content
    assert await balance(account) == 100_000 - total


async def test_agent_short_balance_opens_no_checkout(
    app: FastAPI, platform: Platform, account: Account
) -> None:
    await fresh_stock(platform, "proxy_datacenter", "IS", 10)
    await account.credit(100)
    order = {**MIX, "whitelist_ips": ["127.0.0.9"], "idempotency_key": uuid.uuid4().hex}
    async with mcp_client(app, await account.key()) as client:
        refused = await client.call_tool("order_composite", {**order, "max_total_cents": 1_000_000})
        services = await client.call_tool("list_services", {})
    assert refused.is_error is True
    assert text(refused).startswith("insufficient_balance: ") and "init_deposit" in text(refused)
    assert await balance(account) == 100
    assert services.structured_content is not None and services.structured_content["total"] == 0
