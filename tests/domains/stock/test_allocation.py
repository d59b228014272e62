"""Concurrent orders for the last IPs: nobody gets an IP twice, never oversold, losers pay nothing."""

import asyncio
import uuid
from collections import Counter

import httpx
import pytest
from sqlalchemy import select

from proxyplane.platform import Platform
from proxyplane.storage.models import ServiceIp, StockIp
from tests.adapters.rest.test_order import ORDER, balance, body
from tests.domains.stock.support import fresh_stock
from tests.support import bearer, make_account

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("capacity", [1, 2])
async def test_concurrent_orders_never_oversell(
    client: httpx.AsyncClient, platform: Platform, capacity: int
) -> None:
    addresses = await fresh_stock(platform, "proxy_datacenter", "EE", 20, capacity=capacity)
    accounts = [await make_account(platform) for _ in range(25)]
    keys = [await a.key() for a in accounts]
    for a in accounts:
        await a.credit(1_000)
    results = await asyncio.gather(
        *[client.post(ORDER, json=body("EE", count=8), headers=bearer(k)) for k in keys]
    )
    won = [r for r in results if r.status_code == 201]
    lost = [r for r in results if r.status_code != 201]
    assert all(r.status_code == 422 for r in lost), {r.status_code for r in lost}
    assert 2 <= len(won) <= (20 * capacity) // 8
    if capacity == 1:
        assert len(won) == 2  # dedicated-style stock: every order that fits gets its IPs
    for r, k in zip(results, keys, strict=True):
        paid = r.json()["total_cents"] if r.status_code == 201 else 0
        assert await balance(client, k) == 1_000 - paid
    async with platform.db.unit_of_work(write=False) as uow:
        ips = (
            (await uow.session.execute(select(StockIp).where(StockIp.address.in_(addresses)))).scalars().all()
        )
        assert all(ip.assigned_count <= capacity for ip in ips)
        live = (
            await uow.session.execute(
                select(ServiceIp.service_id, ServiceIp.ip_id).where(
                    ServiceIp.ip_id.in_([ip.id for ip in ips]), ServiceIp.released_at.is_(None)
                )
            )
        ).all()
    per_service = Counter(sid for sid, _ in live)
    assert len(live) == len(set(live)) == 8 * len(won)  # no IP twice in one service
    assert set(per_service) == {uuid.UUID(r.json()["service"]["service_id"]) for r in won}
    assert sum(ip.assigned_count for ip in ips) == len(live)
