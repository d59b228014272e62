"""Spending caps of API keys: set at creation (REST and MCP), shown in the key list, enforced on every
charge through the key (REST and MCP) before anything is charged; concurrent charges cannot pass a cap."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from proxyplane.core.scopes import ALL_SCOPES
from proxyplane.domains.apikeys import caps
from proxyplane.domains.apikeys.service import create_key
from proxyplane.domains.wallet import service as wallet
from proxyplane.platform import Platform
from tests.adapters.mcp.conftest import mcp_client
from tests.adapters.mcp.test_tools import text
from tests.domains.stock.support import fresh_stock
from tests.support import Account, bearer

pytestmark = pytest.mark.anyio
KEYS = "/api/v1/customers/me/api-keys"
MIX = {
    "product_kind": "proxy_datacenter",
    "period_months": 1,
    "segments": [{"country": "IS", "count": 8}],
    "geo_source": "maxmind",
}


def order(**extra: Any) -> dict[str, Any]:
    return {**MIX, "whitelist_ips": ["127.0.0.9"], "idempotency_key": uuid.uuid4().hex, **extra}


async def balance(account: Account) -> int:
    async with account.platform.db.unit_of_work(write=False) as uow:
        return await wallet.balance(uow.session, account.customer_id)


async def quote_total(rest: httpx.AsyncClient) -> int:
    return int((await rest.post("/api/v1/billing/composite/quote", json=MIX)).json()["total_cents"])


async def capped_key(rest: httpx.AsyncClient, account: Account, **limits: int) -> dict[str, Any]:
    admin = await account.key()
    body = {"name": "agent", "scopes": sorted(ALL_SCOPES), **limits}
    created = await rest.post(KEYS, json=body, headers=bearer(admin))
    assert created.status_code == 201, created.text
    return dict(created.json())


async def test_daily_cap_over_mcp_refuses_at_the_cap_and_charges_nothing(
    app: FastAPI, rest: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    await fresh_stock(platform, "proxy_datacenter", "IS", 20)
    await account.credit(100_000)
    total = await quote_total(rest)
    key = await capped_key(rest, account, spend_limit_daily_cents=total + total // 2)
    assert key["spend_limit_daily_cents"] == total + total // 2 and key["spend_limit_total_cents"] is None
    async with mcp_client(app, key["secret"]) as client:
        first = await client.call_tool("order_composite", order(max_total_cents=total))
        second = await client.call_tool("order_composite", order(max_total_cents=total))
        keys = await client.call_tool("list_api_keys", {})
    assert first.is_error is False, text(first)
    assert second.is_error is True
    message = text(second)
    assert message.startswith(
        f"spend_limit_exceeded: this charge of {total} cents would pass the API key's daily"
    )
    assert f"remaining_cents={total // 2}" in message and 'cap="daily"' in message
    assert await balance(account) == 100_000 - total
    assert keys.structured_content is not None
    listed = next(k for k in keys.structured_content["items"] if k["key_id"] == key["key_id"])
    assert listed["spent_today_cents"] == listed["spent_total_cents"] == total
    assert listed["spend_limit_daily_cents"] == total + total // 2


async def test_total_cap_over_rest_is_403_and_other_keys_are_not_capped(
    rest: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    await fresh_stock(platform, "proxy_datacenter", "IS", 20)
    await account.credit(100_000)
    total = await quote_total(rest)
    key = await capped_key(rest, account, spend_limit_total_cents=total - 1)
    refused = await rest.post(
        "/api/v1/billing/composite/order", json=order(use_balance=True), headers=bearer(key["secret"])
    )
    assert refused.status_code == 403, refused.text
    detail = refused.json()["detail"]
    assert detail["error"] == "spend_limit_exceeded" and detail["cap"] == "total"
    assert detail["limit_cents"] == total - 1 and detail["remaining_cents"] == total - 1
    assert await balance(account) == 100_000
    uncapped = await account.key()
    ok = await rest.post(
        "/api/v1/billing/composite/order", json=order(use_balance=True), headers=bearer(uncapped)
    )
    assert ok.status_code == 201, ok.text
    assert await balance(account) == 100_000 - total


async def test_cap_set_over_mcp_and_negative_refused(app: FastAPI, account: Account) -> None:
    async with mcp_client(app, await account.key()) as client:
        made = await client.call_tool(
            "create_api_key",
            {"name": "bot", "scopes": ["wallet:spend"], "spend_limit_daily_cents": 500},
        )
        bad = await client.call_tool(
            "create_api_key", {"name": "bot", "scopes": ["wallet:spend"], "spend_limit_total_cents": -1}
        )
    assert made.structured_content is not None
    assert made.structured_content["spend_limit_daily_cents"] == 500
    assert made.structured_content["spent_today_cents"] == 0
    assert bad.is_error is True and "spend_limit_total_cents" in text(bad)


async def test_concurrent_charges_cannot_pass_the_cap_together(platform: Platform, account: Account) -> None:
    await account.credit(10_000)
    async with platform.db.unit_of_work() as uow:
        key, _ = await create_key(uow.session, account.customer_id, "c", frozenset({"wallet:spend"}))
        await caps.set_caps(uow.session, key.id, None, 1000)
        await uow.commit()

    async def charge() -> str:
        try:
            async with platform.db.unit_of_work() as uow:
                uow.call.spending_key = key.id
                await wallet.debit(uow.session, account.customer_id, 600, "purchase", "concurrent")
                await asyncio.sleep(0.05)
                await uow.commit()
            return "charged"
        except caps.SpendLimitExceeded:
            return "refused"

    results = sorted(await asyncio.gather(charge(), charge()))
    assert results == ["charged", "refused"]
    assert await balance(account) == 10_000 - 600
    async with platform.db.unit_of_work(write=False) as uow:
        state = (await caps.caps_of(uow.session, [key.id]))[key.id]
    assert state.spent_total_cents == 600 and state.remaining_total_cents == 400
