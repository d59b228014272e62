"""The maintained free-IP counts (migration 0021o's triggers, domains/stock/free_counts.py) equal a count
over stock_ips after every kind of change, by either writer (the stock service or plain SQL), for both geo
sources, before and after the renewal job's fold; a rolled-back change leaves them as they were."""

from __future__ import annotations

import pytest
from sqlalchemy import delete, func, select, update

from proxyplane.core.clock import utcnow
from proxyplane.domains.stock import free_counts
from proxyplane.jobs.stock_free_fold import fold_free_counts
from proxyplane.platform import Platform
from proxyplane.storage.models import StockIp
from proxyplane.storage.models.stock_free import StockFree

from .support import fresh_stock

pytestmark = pytest.mark.anyio
POOL = "proxy_isp"


async def _check(platform: Platform) -> dict[str, int]:
    """The maintained counts of the pool (maxmind) after checking both geo sources against a real count."""
    async with platform.db.unit_of_work(write=False) as uow:
        s = uow.session
        got = {}
        for source, col in (("maxmind", StockIp.country_maxmind), ("ripe", StockIp.country_ripe)):
            real = await s.execute(
                select(col, func.count())
                .where(
                    StockIp.product_kind == POOL,
                    StockIp.retired_at.is_(None),
                    StockIp.assigned_count < StockIp.capacity,
                )
                .group_by(col)
            )
            got[source] = await free_counts.free_counts(s, POOL, source)
            assert got[source] == {c: int(n) for c, n in real.all()}, source
        return got["maxmind"]


async def _run(platform: Platform, *statements: object, commit: bool = True) -> None:
    async with platform.db.unit_of_work() as uow:
        for statement in statements:
            await uow.session.execute(statement)  # type: ignore[call-overload]
        if commit:
            await uow.commit()


async def test_counts_follow_every_change_and_survive_the_fold(platform: Platform) -> None:
    await fresh_stock(platform, POOL, "MY", 3, capacity=1)
    ng = await fresh_stock(platform, POOL, "NG", 6, capacity=2)
    assert (await _check(platform))["NG"] == 6
    ip = StockIp.address
    await _run(
        platform,
        update(StockIp).where(ip == ng[0]).values(assigned_count=1),  # still free
        update(StockIp).where(ip == ng[1]).values(assigned_count=2),  # full
        update(StockIp).where(ip == ng[2]).values(retired_at=utcnow()),  # retired
        update(StockIp).where(ip == ng[3]).values(country_ripe="MY"),  # moved (ripe)
    )
    assert (await _check(platform))["NG"] == 4
    await _run(platform, update(StockIp).where(ip == ng[1]).values(assigned_count=1))  # a release
    await _run(platform, update(StockIp).where(ip == ng[0]).values(capacity=1))  # full by capacity
    await _run(platform, delete(StockIp).where(ip == ng[4]))
    await _run(platform, update(StockIp).where(ip == ng[2]).values(retired_at=None, country_maxmind="MY"))
    await _run(platform, delete(StockIp).where(ip == ng[5]), commit=False)  # rolled back
    assert {c: n for c, n in (await _check(platform)).items() if c in ("NG", "MY")} == {
        "NG": 3,
        "MY": 4,
    }  # NG: ng[1], ng[3], ng[5]; MY: 3 + ng[2]
    async with platform.db.unit_of_work(write=False) as uow:
        rows = int(await uow.session.scalar(select(func.count()).select_from(StockFree)) or 0)
    assert await fold_free_counts(platform.db) == rows > 1
    async with platform.db.unit_of_work(write=False) as uow:  # one row per key with a non-zero count
        keys = (
            await uow.session.execute(
                select(StockFree.product_kind, StockFree.country_maxmind, StockFree.country_ripe)
            )
        ).all()
    assert len(keys) == len(set(keys)) < rows
    assert {c: n for c, n in (await _check(platform)).items() if c in ("NG", "MY")} == {"NG": 3, "MY": 4}
