"""The bulk stock import's statements (issue 31: moved from domains/stock/bulk.py, which keeps the
parsing, the chunking and what an import means).

Each chunk of rows goes to a temporary staging table (PostgreSQL: COPY through asyncpg's
`copy_records_to_table`; SQLite: one `executemany`) and is applied with two set-based statements:
reactivate the retired IPs of the chunk that no service holds any more, then `INSERT ... SELECT ... ON
CONFLICT (address) DO NOTHING` the rest. On PostgreSQL a chunk is first tried as a COPY straight into
stock_ips under a savepoint (the common case of a new range). SQLite pauses two row-level triggers for
the import and writes what they would have once (the change log's pool entry, the free counts). The
COPY path is PostgreSQL's own (COPY has no plain-SQL twin); everything runs in the caller's transaction.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from sqlalchemy import bindparam, text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

from proxyplane.core.clock import utcnow
from proxyplane.storage.types import UTCDateTime

STAGING = "pp_stock_staging"
Row = tuple[str, str, str]  # (address, country per MaxMind, country per RIPE)
Progress = Callable[[int], None]


async def _stage(conn: AsyncConnection, postgres: bool, chunk: list[Row]) -> None:
    if postgres:
        raw = await conn.get_raw_connection()
        driver: Any = raw.driver_connection
        await driver.copy_records_to_table(
            STAGING, records=chunk, columns=["address", "country_maxmind", "country_ripe"]
        )
    else:
        await conn.exec_driver_sql(f"INSERT INTO {STAGING} VALUES (?, ?, ?)", chunk)


COLUMNS = ["address", "product_kind", "country_maxmind", "country_ripe", "capacity", "assigned_count", "port",
           "created_at"]


async def _copy_if_new(
    conn: AsyncConnection, chunk: list[Row], pool: str, cap: int, port: int | None, now: Any
) -> bool:
    """PostgreSQL: COPY the chunk straight into stock_ips (the common case of a new range), under a
    savepoint. When an address is in stock already (or a concurrent import just added it) the COPY fails
    on the unique index at that row; the savepoint is rolled back and the chunk goes the staging way
    (False). No existence check first: its plan depends on statistics that a big import makes stale
    (a seq scan per chunk), while the unique index is always there."""
    driver: Any = (await conn.get_raw_connection()).driver_connection
    await driver.execute("SAVEPOINT pp_stock_copy")
    try:
        await driver.copy_records_to_table(
            "stock_ips",
            records=[(address, pool, mm, ripe, cap, 0, port, now) for address, mm, ripe in chunk],
            columns=COLUMNS,
        )
    except Exception as exc:  # asyncpg's UniqueViolationError: a concurrent import won the race
        if getattr(exc, "sqlstate", None) != "23505":
            raise
        await driver.execute("ROLLBACK TO SAVEPOINT pp_stock_copy")
        return False
    await driver.execute("RELEASE SAVEPOINT pp_stock_copy")
    return True


REACTIVATE = f"""
UPDATE stock_ips SET retired_at = NULL, product_kind = :pool, capacity = :cap, port = :port,
    country_maxmind = t.country_maxmind, country_ripe = t.country_ripe
FROM {STAGING} t
WHERE stock_ips.address = t.address AND stock_ips.retired_at IS NOT NULL AND stock_ips.assigned_count = 0
"""

INSERT = f"""
INSERT INTO stock_ips (address, product_kind, country_maxmind, country_ripe, capacity, assigned_count,
    port, created_at)
SELECT t.address, :pool, t.country_maxmind, t.country_ripe, :cap, 0, :port, :now FROM {STAGING} t
WHERE true
ON CONFLICT (address) DO NOTHING
"""

LOG_TRIGGER = "pp_log_stock_ips_insert"  # migration 0012c
# one change-log entry for the pool (gateway nodes re-read it): the log's UPDATE trigger fires for a SET of
# a column a pool reads, here one row of the pool set to its own value
LOG_ONCE = """
UPDATE stock_ips SET product_kind = product_kind
WHERE id = (SELECT max(id) FROM stock_ips WHERE product_kind = :pool)
"""

# SQLite: the free-count trigger of stock_ips (migration 0021o) writes one delta row per inserted IP; an
# import pauses it like the log trigger and adds the new rows' counts in one statement (ids above `top`,
# the largest id before the import: one writer, so every row above it is this import's)
FREE_TRIGGER = "pp_stock_free_insert"
FREE_ONCE = """
INSERT INTO stock_free (product_kind, country_maxmind, country_ripe, free)
SELECT product_kind, country_maxmind, country_ripe, count(*) FROM stock_ips
WHERE id > :top AND retired_at IS NULL AND assigned_count < capacity
GROUP BY product_kind, country_maxmind, country_ripe
"""


async def import_chunks(
    session: AsyncSession,
    product_kind: str,
    cap: int,
    port: int | None,
    reactivate: bool,
    chunks: Iterable[tuple[list[Row], int]],
    progress: Progress | None = None,
) -> tuple[int, int, int]:
    """Apply the chunks ((new distinct rows, input rows consumed) each) to the pool: (added, skipped,
    statements run). `reactivate`: a retired IP no service holds is reactivated (counted as added)."""
    conn = await session.connection()
    postgres = conn.dialect.name == "postgresql"
    params = {"pool": product_kind, "cap": cap, "port": port}
    now = utcnow()
    insert = text(INSERT).bindparams(bindparam("now", now, type_=UTCDateTime()))
    temp = "TEMPORARY TABLE" if postgres else "TEMP TABLE"
    await conn.exec_driver_sql(f"DROP TABLE IF EXISTS {STAGING}")
    await conn.exec_driver_sql(
        f"CREATE {temp} {STAGING} (address VARCHAR(45) NOT NULL, country_maxmind VARCHAR(2) NOT NULL, "
        "country_ripe VARCHAR(2) NOT NULL)"
    )
    statements, added, skipped = 2, 0, 0
    log_trigger = None if postgres else await _pause_log_trigger(conn)
    statements += 0 if log_trigger is None else 3  # read, drop and re-create it
    free_trigger = None if postgres else await _pause_log_trigger(conn, FREE_TRIGGER)
    top = 0
    if free_trigger is not None:  # the new rows' free counts are added once, after the last chunk
        top = int((await conn.exec_driver_sql("SELECT coalesce(max(id), 0) FROM stock_ips")).scalar() or 0)
        statements += 5  # read, drop, the top id, re-create, the counts
    for chunk, consumed in chunks:
        skipped += consumed - len(chunk)  # repeated in the input
        if chunk and postgres and await _copy_if_new(conn, chunk, product_kind, cap, port, now):
            statements += 3
            added += len(chunk)
        elif chunk:
            statements += 3 if postgres else 0  # the savepoint, the COPY that failed, the rollback
            await _stage(conn, postgres, chunk)
            back = (await conn.execute(text(REACTIVATE), params)).rowcount if reactivate else 0
            new = (await conn.execute(insert, params)).rowcount
            await conn.exec_driver_sql(f"{'TRUNCATE' if postgres else 'DELETE FROM'} {STAGING}")
            statements += 4 if reactivate else 3
            added += back + new
            skipped += len(chunk) - back - new
        if progress is not None:
            progress(consumed)
    # on an error the caller's rollback drops the table (and restores the trigger) with everything else
    await conn.exec_driver_sql(f"DROP TABLE {STAGING}")
    if free_trigger is not None:
        await conn.exec_driver_sql(free_trigger)
        await conn.execute(text(FREE_ONCE), {"top": top})
    if log_trigger is not None:
        await conn.exec_driver_sql(log_trigger)
        if added:
            await conn.execute(text(LOG_ONCE), params)
            statements += 1
    return added, skipped, statements + 1




async def _pause_log_trigger(conn: AsyncConnection, name: str = LOG_TRIGGER) -> str | None:
    """SQLite: drop a row-level INSERT trigger of stock_ips (the change log's unless `name` says another)
    for this transaction and return its SQL to re-create it (None when there is none). The log's trigger
    logs the same pool key once per inserted row, which would double the cost of an import; the import
    logs its pool once at the end instead (LOG_ONCE); the free-count one: FREE_ONCE.
    Safe because SQLite has one writer and DDL is transactional: no other connection writes while the
    trigger is away, and a rollback restores it."""
    found = (
        await conn.exec_driver_sql(
            "SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = ?", (name,)
        )
    ).scalar()
    if not found:
        return None
    await conn.exec_driver_sql(f"DROP TRIGGER {name}")
    return str(found)
