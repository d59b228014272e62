"""bench/platform_data.py at its small size: every figure is measured on real generated data (a range
imported, minute usage with rollups, a customer's lists), and the data is removed afterwards."""

from __future__ import annotations

import re

import pytest
from bench.platform_data import measure
from sqlalchemy import func, select

from proxyplane.storage.engine import Database
from proxyplane.storage.models import Customer, StockIp
from proxyplane.storage.models.gateway import UsageMinute
from proxyplane.storage.models.usage_rollups import UsageRollup

pytestmark = pytest.mark.anyio


async def counts(url: str) -> tuple[int, ...]:
    db = Database(url)
    try:
        async with db.unit_of_work(write=False) as uow:
            out = []
            for model in (StockIp, UsageMinute, UsageRollup, Customer):
                out.append(int(await uow.session.scalar(select(func.count()).select_from(model)) or 0))
            return tuple(out)
    finally:
        await db.dispose()


async def test_small_size_measures_and_cleans_up(database_url: str) -> None:
    before = await counts(database_url)
    rows = await measure(database_url, "small")
    assert await counts(database_url) == before
    figures = {figure: measured for figure, measured, _, _ in rows}
    assert figures["import a /22 (1,022 IPs)"].endswith("(1,022 new)")
    usage = [m for f, m in figures.items() if f.startswith("usage totals")]
    lists = [m for f, m in figures.items() if f.startswith("list ")]
    assert len(usage) == 3 and len(lists) == 9
    assert all(re.fullmatch(r"\d+\.\d ms p50 \(min \d+\.\d; CPU \d+\.\d ms/call\)", m) for m in usage + lists)
