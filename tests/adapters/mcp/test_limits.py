"""Warnings before limits (issue 21.5): the `proxyplane://account/limits` resource and a `warning` log
notification on a spending call's stream when the balance is below the customer's threshold or a spend
cap is more than 80 % used."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from fastapi import FastAPI
from mcp_types import LoggingMessageNotificationParams, TextResourceContents

from proxyplane.core.scopes import ALL_SCOPES
from proxyplane.platform import Platform
from tests.adapters.mcp.conftest import mcp_client
from tests.adapters.mcp.test_orders import MIX
from tests.adapters.mcp.test_tools import text
from tests.domains.stock.support import fresh_stock
from tests.support import Account

pytestmark = pytest.mark.anyio


async def capped_key(account: Account, total_cents: int) -> str:
    from proxyplane.domains.apikeys import caps
    from proxyplane.domains.apikeys.service import create_key

    async with account.platform.db.unit_of_work() as uow:
        key, raw = await create_key(uow.session, account.customer_id, "capped", frozenset(ALL_SCOPES))
        await caps.set_caps(uow.session, key.id, None, total_cents)
        await uow.commit()
    return raw


async def test_spend_near_its_limits_warns_and_the_resource_says_why(
    app: FastAPI, platform: Platform, account: Account
) -> None:
    await fresh_stock(platform, "proxy_datacenter", "IS", 10)
    logs: list[LoggingMessageNotificationParams] = []

    async def on_log(params: LoggingMessageNotificationParams) -> None:
        logs.append(params)

    async with mcp_client(app, await account.key(), mode="legacy") as client:
        quote = await client.call_tool("quote_composite", MIX)
    assert quote.structured_content is not None
    total = quote.structured_content["total_cents"]
    await account.credit(total + 50)
    order: dict[str, Any] = {**MIX, "whitelist_ips": ["127.0.0.9"], "idempotency_key": uuid.uuid4().hex}
    async with mcp_client(
        app, await capped_key(account, total + 10), mode="legacy", logging_callback=on_log
    ) as c:
        before = await c.read_resource("proxyplane://account/limits")
        settings = await c.call_tool("update_notification_settings", {"balance_low_threshold_cents": 100})
        ok = await c.call_tool("order_composite", {**order, "max_total_cents": total})
        after = await c.read_resource("proxyplane://account/limits")
    assert settings.is_error is False and ok.is_error is False, text(ok)
    first, last = (
        json.loads(r.contents[0].text)
        for r in (before, after)
        if isinstance(r.contents[0], TextResourceContents)
    )
    assert first["warnings"] == [] and first["spend_caps"][0]["spent_cents"] == 0
    assert last["balance_cents"] == 50 and len(last["warnings"]) == 2
    assert "below the balance-low threshold of 100 cents" in last["warnings"][0]
    assert f"total spend cap is {total} of {total + 10} cents used" in last["warnings"][1]
    (warned,) = logs
    assert warned.level == "warning" and warned.data["warnings"] == last["warnings"]
