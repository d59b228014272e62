"""Free-IP counts per country, O(1) in the stock's size (issue 15): the sums of the `stock_free` delta rows
that database triggers write in the transaction of every change of stock_ips (migration 0021o), so the
count a reader sees is exact at its snapshot. Deltas are only ever inserted (two orders never wait on a
counter row); the fold (storage/repos/stock_free.py: the renewal job, jobs/renewals.py, every minute, and
jobs/stock_free_fold.py) leaves one row per key."""

from __future__ import annotations

from collections.abc import Collection

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.storage.models.stock_free import StockFree


async def free_counts(
    session: AsyncSession, product_kind: str, geo_source: str, countries: Collection[str] | None = None
) -> dict[str, int]:
    """{country: free IPs} of a pool by a geo source (only `countries` when given; countries without a
    free IP left out): one grouped sum over the pool's delta rows."""
    col = StockFree.country_ripe if geo_source == "ripe" else StockFree.country_maxmind
    q = select(col, func.sum(StockFree.free)).where(StockFree.product_kind == product_kind)
    if countries is not None:
        if not countries:
            return {}
        q = q.where(col.in_(sorted(set(countries))))
    rows = await session.execute(q.group_by(col))
    return {country: int(n) for country, n in rows.all() if n and n > 0}
