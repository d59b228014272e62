"""Warnings before limits (issue 21.5): the `proxyplane://account/limits` resource and, when the balance
is below the customer's threshold or a spend cap is more than 80 % used after a spend, the era's notice:
a `warning` log notification on the call's stream (2025-11-25), `notifications/resources/updated` on the
account's `subscriptions/listen` streams (2026-07-28, which deprecates logging)."""

from __future__ import annotations

import json
import uuid
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from fastapi import FastAPI
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.server.subscriptions import ResourceUpdated, ToolsListChanged
from mcp_types import LoggingMessageNotificationParams, TextResourceContents

from proxyplane.adapters.mcp.limits import LIMITS_URI
from proxyplane.adapters.mcp.listen import AccountBus, streams_owned_by
from proxyplane.core.scopes import ALL_SCOPES
from proxyplane.platform import Platform
from tests.adapters.mcp.conftest import mcp_client
from tests.adapters.mcp.test_loopback import serve
from tests.adapters.mcp.test_orders import MIX
from tests.adapters.mcp.test_tools import text
from tests.domains.stock.support import fresh_stock
from tests.support import Account, bearer

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


async def test_rest_serves_the_same_limits_as_the_resource(app: FastAPI, account: Account) -> None:
    """One registered read (`get_account_limits`): GET /customer/limits and the MCP resource agree."""
    key = await capped_key(account, 1000)
    await account.credit(40)
    transport = httpx.ASGITransport(app=app, client=("127.0.0.9", 50000))
    async with httpx.AsyncClient(
        transport=transport, base_url="http://testserver", headers=bearer(key)
    ) as rest:
        settings = await rest.patch(
            "/api/v1/customer/me/notifications", json={"balance_low_threshold_cents": 100}
        )
        served = await rest.get("/api/v1/customer/limits")
        anonymous = await rest.get("/api/v1/customer/limits", headers={"Authorization": ""})
    async with mcp_client(app, key) as client:
        resource = await client.read_resource(LIMITS_URI)
    assert settings.status_code == 200, settings.text
    assert served.status_code == 200 and anonymous.status_code == 401
    content = resource.contents[0]
    assert isinstance(content, TextResourceContents)
    assert served.json() == json.loads(content.text)
    assert served.json()["spend_caps"] == [
        {"cap": "total", "limit_cents": 1000, "spent_cents": 0, "near": False}
    ]
    assert served.json()["warnings"] == ["balance 40 cents is below the balance-low threshold of 100 cents"]


async def test_2026_era_notifies_the_accounts_listen_streams(platform: Platform, account: Account) -> None:
    await fresh_stock(platform, "proxy_datacenter", "IS", 10)
    key = await account.key()
    logs: list[LoggingMessageNotificationParams] = []

    async def on_log(params: LoggingMessageNotificationParams) -> None:
        logs.append(params)

    async with serve(platform) as base, httpx2.AsyncClient(headers=bearer(key), timeout=30) as hc:
        url = base + "/api/v1/mcp"
        async with Client(streamable_http_client(url, http_client=hc), mode="2026-07-28") as listener:
            async with listener.listen(resource_subscriptions=[LIMITS_URI]) as stream:
                quote = await listener.call_tool("quote_composite", MIX)
                assert quote.structured_content is not None
                total = quote.structured_content["total_cents"]
                await account.credit(total + 50)
                capped = await capped_key(account, total + 10)
                threshold = {"balance_low_threshold_cents": 100}
                assert (await listener.call_tool("update_notification_settings", threshold)).is_error is False
                async with httpx2.AsyncClient(headers=bearer(capped), timeout=30) as buyer_http:
                    transport = streamable_http_client(url, http_client=buyer_http)
                    async with Client(transport, mode="2026-07-28", logging_callback=on_log) as buyer:
                        body = {**MIX, "whitelist_ips": ["127.0.0.9"], "idempotency_key": uuid.uuid4().hex}
                        ok = await buyer.call_tool("order_composite", {**body, "max_total_cents": total})
                with anyio.fail_after(20):
                    event = await stream.__anext__()
            limits = await listener.read_resource(LIMITS_URI)
    assert ok.is_error is False, text(ok)
    assert event == ResourceUpdated(uri=LIMITS_URI)
    assert logs == []  # logging is deprecated in 2026-07-28: the resource update replaces it
    content = limits.contents[0]
    assert isinstance(content, TextResourceContents)
    (warning,) = json.loads(content.text)["warnings"]  # the listener's own key has no cap: the balance
    assert "balance 50 cents is below the balance-low threshold of 100 cents" in warning


async def test_account_bus_delivers_an_accounts_events_to_its_streams_only() -> None:
    bus = AccountBus()
    mine: list[object] = []
    theirs: list[object] = []
    with streams_owned_by(1):
        unsubscribe = bus.subscribe(mine.append)
    with streams_owned_by(2):
        bus.subscribe(theirs.append)
    updated, changed = ResourceUpdated(uri=LIMITS_URI), ToolsListChanged()
    await bus.publish_to(1, updated)
    await bus.publish(changed)
    unsubscribe()
    await bus.publish_to(1, updated)
    assert mine == [updated, changed] and theirs == [changed]
    assert bus.streams_of(1) == 0 and bus.streams_of(2) == 1
