"""Availability as a quote asks for it (issue 15.3): capped per country at the count wanted, exact below it;
the uncapped form (the countries endpoint) still counts every free IP."""

from __future__ import annotations

import pytest
from sqlalchemy import update

from proxyplane.core.clock import utcnow
from proxyplane.domains.orders import service as orders
from proxyplane.domains.stock import service as stock
from proxyplane.platform import Platform
from proxyplane.storage.models import StockIp

from .support import fresh_stock

pytestmark = pytest.mark.anyio


async def test_capped_counts_are_exact_below_the_cap(platform: Platform) -> None:
    lu = await fresh_stock(platform, "proxy_isp", "LU", 6, capacity=2)
    lt = await fresh_stock(platform, "proxy_isp", "LT", 4, capacity=2)
    async with platform.db.unit_of_work() as uow:  # one LT IP full, one retired: 2 free in LT
        await uow.session.execute(update(StockIp).where(StockIp.address == lt[0]).values(assigned_count=2))
        await uow.session.execute(update(StockIp).where(StockIp.address == lt[1]).values(retired_at=utcnow()))
        await uow.session.execute(update(StockIp).where(StockIp.address == lu[0]).values(assigned_count=1))
        await uow.commit()
    async with platform.db.unit_of_work(write=False) as uow:
        s = uow.session
        assert await stock.availability(s, "proxy_isp", "maxmind", ["LU", "LT"]) == {"LU": 6, "LT": 2}
        assert await stock.availability(s, "proxy_isp", "maxmind", {"LU": 4, "LT": 10}) == {"LU": 4, "LT": 2}
        assert await stock.availability(s, "proxy_isp", "maxmind", {"LU": 6}) == {"LU": 6}
        assert await stock.availability(s, "proxy_isp", "maxmind", {"LU": 60, "ZA": 3}) == {"LU": 6}
        assert await stock.availability(s, "proxy_isp", "ripe", {"LT": 1}) == {"LT": 1}
        assert await stock.availability(s, "proxy_isp", "maxmind", {}) == {}
        # a quote: fulfillable segments show their count, a short one the exact free number and an error
        priced = await orders.price(s, "proxy_isp", "maxmind", 1, [("LU", 3), ("LT", 5)])
        assert priced.availability == {"LU": 3, "LT": 2}
        assert [(e.country, e.available) for e in priced.errors] == [("LT", 2)]
