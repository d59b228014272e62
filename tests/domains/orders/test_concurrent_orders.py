"""50 concurrent orders of different customers on shared IPs: nobody waits forever, nothing is oversold,
every IP's count matches its live allocations, and an order is refused only when the stock is gone."""

from __future__ import annotations

import asyncio
import uuid

import httpx
import pytest
from sqlalchemy import func, select

from proxyplane.platform import Platform
from proxyplane.storage.models import ServiceIp, StockIp
from tests.domains.stock.support import fresh_stock
from tests.support import bearer, make_account

pytestmark = pytest.mark.anyio
ORDER = "/api/v1/billing/composite/order"
BUYERS, PER_ORDER, IPS, CAPACITY = 50, 2, 30, 3  # 100 slots wanted, 90 for sale


async def test_fifty_concurrent_orders_never_oversell(
    client: httpx.AsyncClient, platform: Platform, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 50 customers: skip the deliberately slow password hashing of their (never used) passwords
    monkeypatch.setattr("proxyplane.domains.accounts.service.hash_password", lambda password: "unused")
    addresses = await fresh_stock(platform, "proxy_isp", "NO", IPS, capacity=CAPACITY)
    keys = []
    for _ in range(BUYERS):
        account = await make_account(platform)
        await account.credit(10_000)
        keys.append(await account.key())

    async def buy(key: str) -> httpx.Response:
        body = {
            "product_kind": "proxy_isp",
            "period_months": 1,
            "segments": [{"country": "NO", "count": PER_ORDER}],
            "whitelist_ips": ["127.0.0.9"],
            "use_balance": True,
            "idempotency_key": uuid.uuid4().hex,
        }
        return await client.post(ORDER, json=body, headers=bearer(key))

    results = await asyncio.gather(*(buy(k) for k in keys))
    sold = [r for r in results if r.status_code == 201]
    refused = [r for r in results if r.status_code != 201]
    assert all(r.status_code == 422 and r.json()["detail"]["error"] == "insufficient_stock" for r in refused)
    # 90 slots on 30 IPs, 2 distinct IPs per order: 45 fit (44 if the last free slots share one IP)
    assert len(sold) >= (IPS * CAPACITY) // PER_ORDER - 1, [r.text for r in refused[:3]]
    for r in sold:
        ips = [i["ip"] for i in r.json()["service"]["ips"]]
        assert len(ips) == len(set(ips)) == PER_ORDER and set(ips) <= set(addresses)
    async with platform.db.unit_of_work(write=False) as uow:
        rows = (
            await uow.session.execute(
                select(StockIp.id, StockIp.assigned_count, StockIp.capacity).where(
                    StockIp.address.in_(addresses)
                )
            )
        ).all()
        live = dict(
            (
                await uow.session.execute(
                    select(ServiceIp.ip_id, func.count())
                    .where(ServiceIp.ip_id.in_([r[0] for r in rows]), ServiceIp.released_at.is_(None))
                    .group_by(ServiceIp.ip_id)
                )
            ).all()
        )
    assert all(count <= cap for _, count, cap in rows)
    assert {ip_id: count for ip_id, count, _ in rows if count} == live
    assert sum(live.values()) == PER_ORDER * len(sold)
