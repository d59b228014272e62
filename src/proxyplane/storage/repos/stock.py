"""The writer of `stock_ips` (the slot counter, the operator's rows) and `service_ips` (issue 31): the
allocation (moved from domains/stock/allocate.py, which keeps the order of business), the releases
(domains/stock/service.release, a refresh's released rows) and the operator's adds and retirements.

One statement takes every IP of an order, whatever its size: per (country, count), the least-shared IPs
that still have a free slot are picked and incremented in ONE `UPDATE stock_ips ... WHERE id IN (<one LIMIT
subquery per country>) AND assigned_count < capacity RETURNING ...` (on PostgreSQL `id = ANY(ARRAY(...))`,
so the picks run once: see `picked_ids`). On PostgreSQL the picks lock with `FOR UPDATE SKIP LOCKED` and,
lean (storage/engine_choice.py), the same statement inserts the `service_ips` rows (a data-modifying CTE);
plain (SQLite, or the lean forms off) a second statement inserts them in one executemany. Nothing is ever
oversold: the slot condition is checked on the locked row (PostgreSQL re-checks it on the latest version)
and the CHECK constraint `assigned_count <= capacity` backs it up.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from sqlalchemy import Table, Uuid, bindparam, insert, select, text, update
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.storage.driver import DriverStatement
from proxyplane.storage.engine_choice import is_postgres, lean
from proxyplane.storage.models import ServiceIp, StockIp
from proxyplane.storage.rowcount import rowcount
from proxyplane.storage.types import UTCDateTime


@dataclass(frozen=True)
class Allocated:
    ip_id: int
    address: str
    port: int | None
    country: str


def skips_held_rows(session: AsyncSession) -> bool:
    """Whether the picks skip rows other units of work hold (PostgreSQL: `FOR UPDATE SKIP LOCKED`), so a
    take may come back short while stock with room exists; the caller then rolls back to a savepoint and
    takes again waiting (`wait=True`, in id order). False on SQLite: writing units of work run one at a
    time (BEGIN IMMEDIATE), nothing is ever held by another."""
    return is_postgres(session)


def country_column(geo_source: str) -> str:
    return "country_ripe" if geo_source == "ripe" else "country_maxmind"


@dataclass(frozen=True)
class PlaceFilter:
    """A static order's place (issue 36): the exact ip_geo names of one geo source its IPs must have
    (None: any; an empty tuple: none fits)."""

    geo_source: str
    regions: tuple[str, ...] | None = None
    cities: tuple[str, ...] | None = None
    prefix_ids: tuple[int, ...] | None = None  # proxy_ipv6: the prefixes placed there (their subnets)


def place_sql(place: PlaceFilter | None, params: dict[str, Any]) -> str:
    """The condition a stock row lies in `place` (its ip_geo row, by primary key), its parameters added."""
    if place is None:
        return ""
    params["pl_source"] = place.geo_source
    conds = ["g.address = stock_ips.address", "g.geo_source = :pl_source"]
    for column, names in (("region", place.regions), ("city", place.cities)):
        if names == ():
            return " AND 1 = 0"  # the place has no stock: nothing is taken
        if names:
            keys = [f"pl_{column}{j}" for j in range(len(names))]
            params.update(zip(keys, names, strict=True))
            conds.append(f"g.{column} IN ({', '.join(':' + k for k in keys)})")
    return f" AND EXISTS (SELECT 1 FROM ip_geo g WHERE {' AND '.join(conds)})"


def pick_sql(
    segments: Sequence[tuple[str, int]],
    col: str,
    postgres: bool,
    wait: bool,
    exclude: bool,
    place: PlaceFilter | None = None,
) -> tuple[str, dict[str, Any]]:
    """One `SELECT id FROM (... LIMIT n) UNION ALL ...` over the segments (every one in `place`, if
    given); its parameters (a fragment of the lean order statement too: storage/repos/orders.py)."""
    params: dict[str, Any] = {}
    parts = []
    if postgres:
        lock = " FOR UPDATE" if wait else " FOR UPDATE SKIP LOCKED"
        order = "id" if wait else "assigned_count, id"
        skip = " AND id <> ALL(CAST(:exclude AS BIGINT[]))" if exclude else ""
    else:
        lock, order = "", "assigned_count, id"
        skip = " AND id NOT IN :exclude" if exclude else ""
    skip += place_sql(place, params)
    for i, (country, count) in enumerate(segments):
        params[f"c{i}"], params[f"n{i}"] = country, count
        parts.append(
            f"SELECT id FROM (SELECT id FROM stock_ips WHERE product_kind = :kind AND {col} = :c{i}"
            f" AND retired_at IS NULL AND assigned_count < capacity{skip}"
            f" ORDER BY {order} LIMIT :n{i}{lock}) AS s{i}"
        )
    return " UNION ALL ".join(parts), params


def picked_ids(picks: str, postgres: bool) -> str:
    """The condition `id` is one of `picks` (pick_sql's SELECT). PostgreSQL: `id = ANY(ARRAY(<picks>))`,
    an InitPlan run ONCE per statement. Not `id IN (<picks>)`: the planner may make that a nested-loop
    semi-join that rescans the LIMIT ... FOR UPDATE SKIP LOCKED subquery for every outer row, and each
    rescan skips the rows this statement has just updated and returns the NEXT n: an order of 8 took 16
    IPs (seen with a small table's statistics: tests/domains/stock/test_pick_once.py)."""
    return f"id = ANY(ARRAY({picks}))" if postgres else f"id IN ({picks})"


def take_ips_cte(picks: str, col: str, sources_exist: str, service_id: str, now: str) -> str:
    """The lean order statement's allocation (storage/repos/orders.py): CTEs `picked` (the slot counter)
    and `added` (the service_ips rows), taken only when `sources_exist` (a CTE name) has a row."""
    return (
        "picked AS (UPDATE stock_ips SET assigned_count = assigned_count + 1"
        f" WHERE {picked_ids(picks, True)}"
        f" AND assigned_count < capacity AND EXISTS (SELECT 1 FROM {sources_exist})"
        f" RETURNING id, address, port, {col} AS country),"
        " added AS (INSERT INTO service_ips (service_id, ip_id, address, port, country, allocated_at)"
        f" SELECT {service_id}, id, address, port, country, {now} FROM picked ORDER BY id)"
    )


async def take_ips(
    session: AsyncSession,
    service_id: uuid.UUID,
    product_kind: str,
    geo_source: str,
    wanted: Sequence[tuple[str, int]],
    exclude: set[int] | frozenset[int],
    wait: bool,
    now: datetime,
    place: PlaceFilter | None = None,
) -> list[Allocated]:
    """Take up to `count` IPs per (country, count > 0), never one of `exclude`, only IPs in `place` if
    given, recorded in service_ips (see the module docstring); in ip id order."""
    postgres = is_postgres(session)
    col = country_column(geo_source)
    picks, params = pick_sql(wanted, col, postgres, wait, bool(exclude), place)
    params["kind"] = product_kind
    update = (
        f"UPDATE stock_ips SET assigned_count = assigned_count + 1 WHERE {picked_ids(picks, postgres)}"
        f" AND assigned_count < capacity RETURNING id, address, port, {col} AS country"
    )
    if postgres and exclude:
        params["exclude"] = sorted(exclude)
    if postgres and lean(session):
        sql = (
            f"WITH picked AS ({update}), added AS (INSERT INTO service_ips"
            " (service_id, ip_id, address, port, country, allocated_at)"
            " SELECT :sid, id, address, port, country, :now FROM picked ORDER BY id)"
            " SELECT id, address, port, country FROM picked ORDER BY id"
        )
        params |= {"sid": service_id, "now": now}
        rows = await _driver_statement(sql).rows(session, params)
        return [Allocated(int(r[0]), r[1], r[2], r[3]) for r in rows]
    if exclude and not postgres:
        stmt = text(update).bindparams(bindparam("exclude", expanding=True))
        params["exclude"] = sorted(exclude)
        found = list((await session.execute(stmt, params)).all())
    else:
        found = await _driver_statement(update).rows(session, params)
    rows = sorted(found, key=lambda r: int(r[0]))
    got = [Allocated(int(r[0]), r[1], r[2], r[3]) for r in rows]
    if got:
        await _INSERT_SERVICE_IPS.many(
            session,
            [
                {
                    "service_id": service_id,
                    "ip_id": a.ip_id,
                    "address": a.address,
                    "port": a.port,
                    "country": a.country,
                    "allocated_at": now,
                }
                for a in got
            ],
        )
    return got


_INSERT_SERVICE_IPS = DriverStatement(insert(cast(Table, ServiceIp.__table__)))
_STATEMENTS: dict[str, DriverStatement] = {}


def _driver_statement(sql: str) -> DriverStatement:
    """The allocation statement of one shape (segment count, lock, exclusion), built once and run on the
    driver connection (storage/driver.py); its typed parameters: the service id and the time."""
    stmt = _STATEMENTS.get(sql)
    if stmt is None:
        if len(_STATEMENTS) > 2000:  # shapes vary with the segment count only; bounded anyway
            _STATEMENTS.clear()
        bound = text(sql)
        if ":sid" in sql:
            bound = bound.bindparams(bindparam("sid", type_=Uuid()), bindparam("now", type_=UTCDateTime()))
        stmt = _STATEMENTS[sql] = DriverStatement(bound)
    return stmt


# --- release, add, retire -------------------------------------------------------------------------


async def release_service(session: AsyncSession, service_id: uuid.UUID, now: datetime) -> int:
    """Free every live IP of a service (idempotent) in two statements: the slot counters, then its
    service_ips rows released at `now`; how many rows were released."""
    live = select(ServiceIp.ip_id).where(ServiceIp.service_id == service_id, ServiceIp.released_at.is_(None))
    await session.execute(
        update(StockIp)
        .where(StockIp.id.in_(live.scalar_subquery()), StockIp.assigned_count > 0)
        .values(assigned_count=StockIp.assigned_count - 1)
        .execution_options(synchronize_session=False)
    )
    freed = await session.execute(
        update(ServiceIp)
        .where(ServiceIp.service_id == service_id, ServiceIp.released_at.is_(None))
        .values(released_at=now)
    )
    return rowcount(freed)


async def release_rows(session: AsyncSession, rows: Sequence[ServiceIp], now: datetime) -> None:
    """Release these loaded service_ips rows (a refresh's replaced IPs) at `now`, one slot counter each;
    flushed."""
    for row in rows:
        row.released_at = now
        await session.execute(
            update(StockIp)
            .where(StockIp.id == row.ip_id, StockIp.assigned_count > 0)
            .values(assigned_count=StockIp.assigned_count - 1)
        )
    await session.flush()


def add_stock_ip(
    session: AsyncSession,
    address: str,
    product_kind: str,
    country_maxmind: str,
    country_ripe: str,
    capacity: int,
    port: int | None,
) -> None:
    """A new IP on sale, added to the session (flushed with the caller's next flush)."""
    session.add(
        StockIp(
            address=address,
            product_kind=product_kind,
            country_maxmind=country_maxmind,
            country_ripe=country_ripe,
            capacity=capacity,
            assigned_count=0,
            port=port,
        )
    )


def reactivate(
    row: StockIp,
    product_kind: str,
    country_maxmind: str,
    country_ripe: str,
    capacity: int,
    port: int | None,
) -> None:
    """A retired IP (loaded, held by no service) on sale again in `product_kind`'s pool."""
    row.retired_at = None
    row.product_kind, row.capacity, row.port = product_kind, capacity, port
    row.country_maxmind, row.country_ripe = country_maxmind, country_ripe


async def retire_addresses(session: AsyncSession, addresses: Sequence[str], now: datetime) -> int:
    """Stop selling these IPs (retired at `now`; services holding them keep them); how many were still on
    sale."""
    result = await session.execute(
        update(StockIp)
        .where(StockIp.address.in_(addresses), StockIp.retired_at.is_(None))
        .values(retired_at=now)
    )
    return rowcount(result)
