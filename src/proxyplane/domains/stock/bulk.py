"""Bulk stock import: ranges and files of exit IPs, set-based, tens of thousands of IPs per second.

The rows of an import go in chunks of CHUNK to a temporary staging table (PostgreSQL: COPY through
asyncpg's `copy_records_to_table`; SQLite: one `executemany`), and each chunk is applied with two
set-based statements: reactivate the retired IPs of the chunk that no service holds any more, then
`INSERT ... SELECT ... ON CONFLICT (address) DO NOTHING` the rest. Duplicates are found by the unique
index on `stock_ips.address` (O(chunk log stock), never a scan of the stock) and, inside one import,
by a set of the addresses seen. So the statement count of an import is bounded by its chunk count,
whatever the stock holds; everything runs in the caller's transaction (services never commit).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from itertools import repeat
from typing import Any

from sqlalchemy import bindparam, text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

from proxyplane.core.clock import utcnow
from proxyplane.domains.stock.countries import normalize_country
from proxyplane.domains.stock.service import pool_capacity
from proxyplane.storage.types import UTCDateTime

CHUNK = 25_000
MAX_RANGE = 1 << 24  # one range (a /8) at most; a /16 per pool is the usual size
STAGING = "pp_stock_staging"

Row = tuple[str, str, str]  # (address, country per MaxMind, country per RIPE)
Progress = Callable[[int], None]  # called with the number of input rows handled since the last call


@dataclass(frozen=True)
class ImportResult:
    added: int  # new rows plus retired, unheld IPs reactivated in the pool
    skipped: int  # already in stock (live or held), or repeated in the input
    statements: int  # SQL statements and COPYs run (bounded by the chunk count)


@lru_cache(maxsize=512)
def country(code: str) -> str:
    return normalize_country(code)


def parse_ipv4(value: str) -> str:
    try:
        return str(ipaddress.IPv4Address(value.strip()))
    except ValueError as exc:
        raise ValueError(f"not an IPv4 address: {value!r}") from exc


def range_bounds(spec: str) -> tuple[int, int]:
    """(first, last) address as integers of `127.0.1.0/24` (the usable hosts of the network, or every
    address of a /31 or /32) or `127.0.1.10-127.0.1.20` (inclusive)."""
    spec = spec.strip()
    if "-" in spec:
        lo, hi = (int(ipaddress.IPv4Address(p.strip())) for p in spec.split("-", 1))
        if hi < lo:
            raise ValueError(f"empty range {spec!r}")
    else:
        net = ipaddress.IPv4Network(spec, strict=False)
        lo, hi = int(net.network_address), int(net.broadcast_address)
        if net.prefixlen < 31:
            lo, hi = lo + 1, hi - 1
    if hi - lo + 1 > MAX_RANGE:
        raise ValueError(f"a range may hold at most {MAX_RANGE} addresses")
    return lo, hi


def dotted(n: int) -> str:
    return f"{n >> 24}.{n >> 16 & 255}.{n >> 8 & 255}.{n & 255}"


_OCTETS = [str(i) for i in range(256)]


class RangeRows:
    """The rows of one address range (distinct by construction), built a /24 at a time from string
    prefixes and tuples made by `zip` (C speed: no per-address integer formatting or dict)."""

    def __init__(self, first: int, last: int, country_maxmind: str, country_ripe: str) -> None:
        self.first, self.last = first, last
        self.mm, self.ripe = country(country_maxmind), country(country_ripe)

    def __len__(self) -> int:
        return self.last - self.first + 1

    def __iter__(self) -> Iterator[Row]:
        for chunk in self.chunks(CHUNK):
            yield from chunk

    def addresses(self, first: int, last: int) -> list[str]:
        out: list[str] = []
        n = first
        while n <= last:
            block_end = min(last, n | 255)
            prefix = f"{n >> 24}.{n >> 16 & 255}.{n >> 8 & 255}."
            out += [prefix + octet for octet in _OCTETS[n & 255 : (block_end & 255) + 1]]
            n = block_end + 1
        return out

    def chunks(self, size: int) -> Iterator[list[Row]]:
        for start in range(self.first, self.last + 1, size):
            end = min(self.last, start + size - 1)
            addresses = self.addresses(start, end)
            yield list(zip(addresses, repeat(self.mm, len(addresses)), repeat(self.ripe, len(addresses)),
                           strict=True))


def range_rows(first: int, last: int, country_maxmind: str, country_ripe: str) -> RangeRows:
    return RangeRows(first, last, country_maxmind, country_ripe)


def file_rows(lines: Iterable[str]) -> Iterator[Row]:
    """`IP MAXMIND_COUNTRY [RIPE_COUNTRY]` per line (`,` also separates; `#` starts a comment)."""
    for n, raw in enumerate(lines, 1):
        parts = raw.split("#", 1)[0].replace(",", " ").split()
        if not parts:
            continue
        if len(parts) not in (2, 3):
            raise ValueError(f"line {n}: expected `IP COUNTRY [RIPE_COUNTRY]`")
        try:
            mm = country(parts[1])
            yield parse_ipv4(parts[0]), mm, country(parts[2]) if len(parts) == 3 else mm
        except ValueError as exc:
            raise ValueError(f"line {n}: {exc}") from None


def _chunks(rows: Iterable[Row], seen: set[str]) -> Iterator[tuple[list[Row], int]]:
    """(new distinct rows, input rows consumed) per chunk."""
    if isinstance(rows, RangeRows):  # one range: distinct already
        for part in rows.chunks(CHUNK):
            yield part, len(part)
        return
    chunk: list[Row] = []
    consumed = 0
    for row in rows:
        consumed += 1
        if row[0] in seen:
            continue
        seen.add(row[0])
        chunk.append(row)
        if len(chunk) == CHUNK:
            yield chunk, consumed
            chunk, consumed = [], 0
    if chunk or consumed:
        yield chunk, consumed


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


async def import_rows(
    session: AsyncSession,
    product_kind: str,
    rows: Iterable[Row],
    *,
    capacity: int | None = None,
    port: int | None = None,
    reactivate: bool = True,
    progress: Progress | None = None,
) -> ImportResult:
    """Add IPs to a pool in the session's transaction. Rows must hold normalized addresses and
    countries (`range_rows`, `file_rows`). A retired IP that no service holds is reactivated in the
    given pool (counted as added) when `reactivate`; any other address already in stock is skipped."""
    cap = pool_capacity(product_kind, capacity)
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
    seen: set[str] = set()
    for chunk, consumed in _chunks(rows, seen):
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
    return ImportResult(added=added, skipped=skipped, statements=statements + 1)


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
