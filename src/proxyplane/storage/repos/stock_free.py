"""The fold of `stock_free`'s delta rows (issue 31: moved from domains/stock/free_counts.py). The rows
themselves are written by database triggers on stock_ips (migration 0021o); a fold leaves one row per
key, in the caller's (writing) transaction."""

from __future__ import annotations

from sqlalchemy import func, select, text
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.storage.engine import Database
from proxyplane.storage.engine_choice import is_postgres
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


async def fold(session: AsyncSession) -> int:
    """Fold every key's delta rows into one; the rows before."""
    before = int(await session.scalar(select(func.count()).select_from(StockFree)) or 0)
    if before <= 1:
        return before
    if is_postgres(session):
        await session.execute(_FOLD_PG)
    else:
        top = await session.scalar(select(func.max(StockFree.id)))
        for statement in _FOLD_SQLITE:
            await session.execute(statement, {"top": top})
    return before


async def vacuum(db: Database) -> None:
    """PostgreSQL: VACUUM the (small) table after a fold of many rows, so readers do not wade through the
    dead rows until autovacuum; nothing on SQLite."""
    if db.is_sqlite:
        return
    async with db.engine.connect() as conn:
        conn = await conn.execution_options(isolation_level="AUTOCOMMIT")
        await conn.exec_driver_sql("VACUUM stock_free")
