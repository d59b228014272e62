"""The engine-specific reads of a gateway node's load (gateway/store_load.py builds the plain-column Core
selects; the engine's way of running the big ones is chosen here).

- ``stream``: the rows of a constant Core select in partitions. PostgreSQL: the statement (literal binds)
  on the asyncpg connection itself, a server-side cursor fetched PARTITION rows at a time (asyncpg
  records, no SQLAlchemy row processing: a cold start reads a million rows); elsewhere a Core stream.
- ``exit_pool``: a rotating pool's exits; PostgreSQL: one row of two arrays (array_agg, C speed).
- ``all_exit_ips_apart``: a full load's static exit IPs, PostgreSQL only, on a connection of its own
  while the node builds the service entries.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Sequence
from typing import Any

from sqlalchemy import ColumnElement, func, select
from sqlalchemy.dialects.postgresql import aggregate_order_by
from sqlalchemy.dialects.postgresql import array_agg as _pg_array_agg
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, AsyncSession

from proxyplane.storage.models import ServiceIp, StockIp

PARTITION = 20_000  # rows per streamed partition

ExitIps = dict[Any, dict[str, str]]


def array_agg(ordered: aggregate_order_by[Any]) -> ColumnElement[Any]:
    """PostgreSQL's array_agg (its ARRAY result type); the SQLAlchemy function itself is untyped."""
    out: ColumnElement[Any] = _pg_array_agg(ordered)  # type: ignore[no-untyped-call]
    return out


def country(cache: dict[Any, str], value: Any) -> str:
    """The country code lower-cased and interned, once per distinct value (``cache``)."""
    out = cache.get(value)
    if out is None:
        out = cache[value] = sys.intern((value or "").lower())
    return out


async def stream(session: AsyncSession, query: Any) -> AsyncIterator[Sequence[Any]]:
    """Rows of a constant Core select in partitions, in the session's transaction."""
    async for part in stream_on(await session.connection(), query):
        yield part


async def stream_on(conn: AsyncConnection, query: Any) -> AsyncIterator[Sequence[Any]]:
    """Rows of a constant Core select in partitions (see the module docstring)."""
    if conn.dialect.name == "postgresql":
        raw: Any = (await conn.get_raw_connection()).driver_connection
        sql = str(query.compile(dialect=conn.dialect, compile_kwargs={"literal_binds": True}))
        if not raw.is_in_transaction():
            await conn.exec_driver_sql("SELECT 1")  # the unit of work's transaction begins
        cursor = await raw.cursor(sql)
        while part := await cursor.fetch(PARTITION):
            yield part
        return
    result = await conn.stream(query.execution_options(yield_per=PARTITION))
    async for part in result.partitions(PARTITION):
        yield part


async def exit_pool(session: AsyncSession, pool: str, geo_source: str) -> dict[str, str]:
    """Exit IPs of a rotating service: the unretired stock of its pool, with countries by its geo source."""
    col = StockIp.country_ripe if geo_source == "ripe" else StockIp.country_maxmind
    query = (
        select(StockIp.address, col)
        .where(StockIp.product_kind == pool, StockIp.retired_at.is_(None))
        .order_by(StockIp.id)
    )
    conn = await session.connection()
    if conn.dialect.name == "postgresql":  # one row of two arrays (C speed), not a row per IP
        agg = select(
            array_agg(aggregate_order_by(StockIp.address, StockIp.id)),
            array_agg(aggregate_order_by(func.lower(col), StockIp.id)),
        ).where(StockIp.product_kind == pool, StockIp.retired_at.is_(None))
        addresses, countries_ = (await conn.execute(agg)).one()
        return dict(zip(addresses or (), map(sys.intern, countries_ or ()), strict=True))
    out: dict[str, str] = {}
    countries: dict[Any, str] = {}
    async for part in stream(session, query):
        for address, code in part:
            out[address] = country(countries, code)
    return out


async def all_exit_ips_apart(session: AsyncSession) -> asyncio.Future[ExitIps] | None:
    """PostgreSQL (a session bound to an engine): every live exit IP, read in the background on a
    connection of its own (``_all_exit_ips_pg``); None elsewhere (the caller reads them in its own
    transaction)."""
    conn = await session.connection()
    engine = session.bind
    if conn.dialect.name == "postgresql" and isinstance(engine, AsyncEngine):
        return asyncio.ensure_future(_all_exit_ips_pg(engine))
    return None


async def _all_exit_ips_pg(engine: AsyncEngine) -> ExitIps:
    """Every live exit IP, one row per service (PostgreSQL array_agg), on a connection of its own so
    that the database groups them while this process builds the service entries: each service's dict
    is made from two arrays at C speed (half the client CPU of a row per IP at a million IPs). Its
    snapshot is a little later than the main one: changes in between are in the change log after the
    node's mark (re-read by the next poll)."""
    query = (
        select(
            ServiceIp.service_id,
            array_agg(aggregate_order_by(ServiceIp.address, ServiceIp.id)),
            array_agg(aggregate_order_by(func.lower(ServiceIp.country), ServiceIp.id)),
        )
        .where(ServiceIp.released_at.is_(None))
        .group_by(ServiceIp.service_id)
    )
    out: ExitIps = {}
    async with engine.connect() as conn, conn.begin():
        async for part in stream_on(conn, query):
            for service_id, addresses, countries in part:
                out[service_id] = dict(zip(addresses, map(sys.intern, countries), strict=True))
    return out
