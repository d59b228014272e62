"""The order's context read (orders/context.py, run on the driver connection) applies the operator's
stored price book overrides: the JSON value decoded on both engines."""

from __future__ import annotations

import uuid

import httpx
import pytest

from proxyplane.domains.pricing.store import reset_overrides, set_overrides
from proxyplane.platform import Platform
from tests.domains.stock.support import fresh_stock
from tests.support import bearer, make_account

pytestmark = pytest.mark.anyio


async def test_an_order_uses_the_stored_price_book_overrides(
    client: httpx.AsyncClient, platform: Platform
) -> None:
    await fresh_stock(platform, "proxy_isp", "IS", 6)
    account = await make_account(platform)
    await account.credit(1_000_000)
    key = await account.key()
    async with platform.db.unit_of_work() as uow:
        await set_overrides(uow.session, "proxy_isp", {"included_connections_per_ip": 7})
        await uow.commit()
    try:
        body = {
            "product_kind": "proxy_isp",
            "period_months": 1,
            "segments": [{"country": "IS", "count": 6}],
            "whitelist_ips": ["127.0.0.9"],
            "use_balance": True,
            "idempotency_key": uuid.uuid4().hex,
        }
        r = await client.post("/api/v1/billing/composite/order", json=body, headers=bearer(key))
        assert r.status_code == 201, r.text
        assert r.json()["service"]["max_connections"] == 7 * 6
    finally:
        async with platform.db.unit_of_work() as uow:
            await reset_overrides(uow.session, "proxy_isp")
            await uow.commit()
