"""Agent operations on real data: recommendations from rows written by the gateway's usage sink, and the
per-service / per-IP connection limit that the gateway's store loads (REST and MCP)."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import update

from proxyplane.core.clock import utcnow
from proxyplane.domains.wallet import service as wallet
from proxyplane.gateway.metering import UsageRow
from proxyplane.gateway.store import load_entries
from proxyplane.gateway.usage_sink import write_usage
from proxyplane.platform import Platform
from proxyplane.storage.models import Service
from tests.adapters.mcp.conftest import mcp_client
from tests.adapters.mcp.test_tools import text
from tests.domains.stock.support import fresh_stock
from tests.support import Account, bearer

pytestmark = pytest.mark.anyio


async def buy(rest: httpx.AsyncClient, platform: Platform, account: Account, key: str) -> dict[str, Any]:
    await fresh_stock(platform, "proxy_datacenter", "IS", 10)
    await account.credit(50_000)
    body = {
        "product_kind": "proxy_datacenter",
        "period_months": 1,
        "segments": [{"country": "IS", "count": 8}],
        "geo_source": "maxmind",
        "whitelist_ips": ["127.0.0.9"],
        "use_balance": True,
        "idempotency_key": uuid.uuid4().hex,
    }
    r = await rest.post("/api/v1/billing/composite/order", json=body, headers=bearer(key))
    assert r.status_code == 201, r.text
    return dict(r.json()["service"])


def by_kind(result: Any) -> dict[str, dict[str, Any]]:
    assert result.is_error is False, text(result)
    return {item["kind"]: item for item in result.structured_content["items"]}


async def test_recommendations_from_metered_usage(
    app: FastAPI, rest: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    key = await account.key()
    svc = await buy(rest, platform, account, key)
    sid = svc["service_id"]
    minute = utcnow().replace(second=0, microsecond=0) - timedelta(hours=1)
    await write_usage(
        platform.db,
        [
            UsageRow(sid, minute, "example.com", requests=100, connections=100, bytes_down=5000),
            UsageRow(sid, minute, "", errors={"limit": 30, "auth": 40}),
            UsageRow(sid, minute - timedelta(days=30), "", errors={"auth": 500}),  # outside the window
        ],
    )
    async with mcp_client(app, key) as client:
        first = by_kind(await client.call_tool("get_recommendations", {}))
        limits = (await client.call_tool("get_connection_limits", {"service_id": sid})).structured_content
    assert limits is not None
    assert set(first) == {"extra_connections", "check_credentials"}
    extra = first["extra_connections"]
    assert extra["action"] == "buy_addon" and extra["service_id"] == sid
    assert extra["data"] == {
        "limit_errors": 30,
        "max_connections": limits["max_connections"],
        "allowed_connections": limits["allowed_connections"],
        "requests": 100,
    }
    assert "refused 30 connections" in extra["reason"]
    creds = first["check_credentials"]
    assert creds["data"] == {"auth_errors": 40, "attempts": 140, "auth_error_percent": 28.6}

    # the term ends in two days without auto-renew -> renew; then auto-renew on with a short balance
    async with platform.db.unit_of_work() as uow:
        await uow.session.execute(
            update(Service)
            .where(Service.service_id == uuid.UUID(sid))
            .values(current_period_end=utcnow() + timedelta(days=2, minutes=5))
        )
        left = await wallet.balance(uow.session, account.customer_id)
        await wallet.debit(uow.session, account.customer_id, left, "adjustment", "test: empty the wallet")
        await uow.commit()
    renewal = (await rest.get(f"/api/v1/customer/services/{sid}", headers=bearer(key))).json()
    async with mcp_client(app, key) as client:
        second = by_kind(await client.call_tool("get_recommendations", {"service_id": sid}))
        renew = second["renew"]
        assert renew["action"] == "renew_service" and renew["data"]["hours_left"] == 48
        price = renew["data"]["renewal_price_cents"]
        assert price > 0
        switched = await client.call_tool("set_auto_renew", {"service_id": sid, "auto_renew": True})
        assert switched.is_error is False, text(switched)
        balance = (await client.call_tool("get_balance", {})).structured_content
        assert balance is not None
        third = by_kind(await client.call_tool("get_recommendations", {}))
    assert renewal["status"] == "active"
    assert "renew" not in third
    top_up = third["top_up"]
    assert top_up["action"] == "init_deposit" and balance["balance_cents"] == 0
    assert top_up["data"] == {"renewals_cents": price, "balance_cents": 0, "missing_cents": price}
    # over REST: the same operation, and a narrow key is told what it lacks
    over_rest = await rest.get("/api/v1/customer/recommendations", params={"days": 7}, headers=bearer(key))
    assert {i["kind"] for i in over_rest.json()["items"]} == set(third)
    narrow = await account.key({"usage:read", "services:read"})
    limited = (await rest.get("/api/v1/customer/recommendations", headers=bearer(narrow))).json()
    assert "top_up" not in {i["kind"] for i in limited["items"]}
    assert limited["notes"] == ["balance vs. upcoming renewals not checked: the key lacks wallet:read"]


async def test_connection_limit_per_ip_reaches_the_gateway_store(
    app: FastAPI, rest: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    key = await account.key()
    svc = await buy(rest, platform, account, key)
    sid = svc["service_id"]

    async def gateway_limit() -> int:
        async with platform.db.unit_of_work(write=False) as uow:
            entries = await load_entries(uow.session, platform.secrets, [uuid.UUID(sid)])
        return entries[uuid.UUID(sid)][0].max_connections

    async with mcp_client(app, key) as client:
        before = (await client.call_tool("get_connection_limits", {"service_id": sid})).structured_content
        assert before is not None and before["ip_count"] == 8 and before["custom_limit"] is None
        allowed = before["allowed_connections"]
        assert before["max_connections"] == allowed == await gateway_limit()
        per_ip = await client.call_tool("set_connection_limit", {"service_id": sid, "connections_per_ip": 2})
        assert per_ip.structured_content is not None
        assert per_ip.structured_content["max_connections"] == 16
        assert per_ip.structured_content["connections_per_ip"] == 2
        assert await gateway_limit() == 16
        too_many = await client.call_tool(
            "set_connection_limit", {"service_id": sid, "max_connections": allowed + 1}
        )
        assert too_many.is_error is True and f"allowed_connections={allowed}" in text(too_many)
        assert "extra_connections" in text(too_many)
    reset = await rest.put(
        f"/api/v1/customer/services/{sid}/proxy/connection-limit", json={}, headers=bearer(key)
    )
    assert reset.status_code == 200, reset.text
    assert reset.json()["custom_limit"] is None and reset.json()["max_connections"] == allowed
    assert await gateway_limit() == allowed
