"""Free-IP counts per country, O(1) in the stock's size (issue 15): the sums of the `stock_free` delta rows
that database triggers write in the transaction of every change of stock_ips (migration 0021o), so the
count a reader sees is exact at its snapshot. Deltas are only ever inserted (two orders never wait on a
counter row); `fold` (the renewal job, jobs/renewals.py, every minute) leaves one row per key."""

from __future__ import annotations

from collections.abc import Collection

from sqlalchemy import func, select, text
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.storage.models.stock_free import StockFree

_COLS = "product_kind, country_maxmind, country_ripe"
# PostgreSQL: one statement, so a delta committed meanwhile is either folded or left as it is, never lost
_FOLD_PG = text(
    f"WITH gone AS (DELETE FROM stock_free RETURNING {_COLS}, free) "
    f"INSERT INTO stock_free ({_COLS}, free) SELECT {_COLS}, sum(free) FROM gone "
    f"GROUP BY {_COLS} HAVING sum(free) <> 0"
)
# SQLite: one writer (the unit of work holds the write lock), so two statements over the same rows
_FOLD_SQLITE = (
    text(
        f"INSERT INTO stock_free ({_COLS}, free) SELECT {_COLS}, sum(free) FROM stock_free WHERE id <= :top "
        f"GROUP BY {_COLS} HAVING sum(free) <> 0"
    ),
    text("DELETE FROM stock_free WHERE id <= :top"),
)


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


async def fold(session: AsyncSession, postgres: bool) -> int:
    """Fold every key's delta rows into one, in the caller's (writing) transaction; the rows before."""
    before = int(await session.scalar(select(func.count()).select_from(StockFree)) or 0)
    if before <= 1:
        return before
    if postgres:
        await session.execute(_FOLD_PG)
    else:
        top = await session.scalar(select(func.max(StockFree.id)))
        for statement in _FOLD_SQLITE:
            await session.execute(statement, {"top": top})
    return before
