"""Issue 36: concurrent orders for the last IPs of a city: exactly the city's free IPs are sold, each once,
only IPs of the city; the rest are refused with insufficient_stock naming the city (the placed path's
SKIP LOCKED pick, savepoint and waiting retry on PostgreSQL; one writer on SQLite)."""

from __future__ import annotations

import asyncio
import random
import uuid

import httpx
import pytest
from sqlalchemy import delete, insert, update

from proxyplane.core.clock import utcnow
from proxyplane.domains.geo import service as geo
from proxyplane.domains.geo.reader import GeoReader
from proxyplane.platform import Platform
from proxyplane.storage.models import IpGeo, StockIp
from tests.domains.geo.mmdb import write
from tests.support import bearer, make_account

pytestmark = pytest.mark.anyio
ORDER = "/api/v1/billing/composite/order"
BUYERS, CITY_IPS = 12, 6


async def test_concurrent_city_orders_never_oversell(
    client: httpx.AsyncClient, platform: Platform, tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("proxyplane.domains.accounts.service.hash_password", lambda password: "unused")
    tag = uuid.uuid4().hex[:6]
    base = f"127.{random.choice([*range(40, 200), *range(201, 250)])}.{random.randrange(0, 250)}"
    city, asn = write(tmp_path, [(f"{base}.0/29", "NO", f"Viken {tag}", "30", f"Drammen {tag}", 64496, "N"),
                                 (f"{base}.8/29", "NO", f"Oslo {tag}", "03", f"Oslo {tag}", 64497, "N")])
    inside = [f"{base}.{n}" for n in range(2, 2 + CITY_IPS)]
    outside = [f"{base}.{n}" for n in range(8, 14)]
    async with platform.db.unit_of_work(write=True) as uow:
        for address in inside + outside:
            await uow.session.execute(insert(StockIp).values(
                address=address, product_kind="proxy_personal", country_maxmind="NO", country_ripe="NO",
                capacity=1, assigned_count=0))
        await geo.locate(uow.session, inside + outside, {"maxmind": GeoReader(city, asn)})
        await uow.commit()
    keys = []
    for _ in range(BUYERS):
        account = await make_account(platform)
        await account.credit(10_000)
        keys.append(await account.key())

    async def buy(key: str) -> httpx.Response:
        body = {"product_kind": "proxy_personal", "period_months": 1,
                "segments": [{"country": "NO", "count": 1, "city": f"Drammen {tag}"}],
                "whitelist_ips": ["127.0.0.9"], "use_balance": True, "idempotency_key": uuid.uuid4().hex}
        return await client.post(ORDER, json=body, headers=bearer(key))

    try:
        results = await asyncio.gather(*(buy(k) for k in keys))
        sold = [r for r in results if r.status_code == 201]
        refused = [r for r in results if r.status_code != 201]
        assert len(sold) == CITY_IPS, [r.text for r in refused[:2]]
        assert all(r.status_code == 422 and r.json()["detail"]["error"] == "insufficient_stock"
                   and f"city 'drammen{tag}'" in r.json()["detail"]["message"] for r in refused)
        ips = [r.json()["service"]["ips"][0]["ip"] for r in sold]
        assert sorted(ips) == sorted(inside)  # each of the city's IPs once, none from Oslo
    finally:
        async with platform.db.unit_of_work(write=True) as uow:
            await uow.session.execute(delete(IpGeo).where(IpGeo.address.in_(inside + outside)))
            await uow.session.execute(update(StockIp).where(StockIp.address.in_(inside + outside))
                                      .values(retired_at=utcnow()))
            await uow.commit()
