"""Set-based allocation of exit IPs: one statement takes every IP of an order, whatever its size.

`take()` picks, per (country, count), the least-shared IPs that still have a free slot and increments them
in ONE `UPDATE stock_ips ... WHERE id IN (<one LIMIT subquery per country>) AND assigned_count < capacity
RETURNING ...` (on PostgreSQL `id = ANY(ARRAY(...))`, so the picks run once: see `picked_ids`); on
PostgreSQL the subqueries lock with `FOR UPDATE SKIP LOCKED` and the same statement
inserts the `service_ips` rows (a data-modifying CTE), so concurrent orders never wait on each other's
stock rows; on SQLite (one writer at a time, BEGIN IMMEDIATE) a second statement inserts them in one
executemany. Nothing is ever oversold: the slot condition is checked on the locked row (PostgreSQL
re-checks it on the latest version) and the CHECK constraint `assigned_count <= capacity` backs it up.

SKIP LOCKED may come back short while other orders hold rows that still have room (shared IPs near the
end of the stock). `take(wait=True)` is the slow path for that case: it waits for such rows, locking
them in id order (no two waiting orders can lock in a cycle); it must run without holding skipped-locked
rows, so callers roll back to a savepoint first (see `allocate` and orders.place_order).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from sqlalchemy import Table, Uuid, bindparam, insert, text
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.core.clock import utcnow
from proxyplane.storage.driver import DriverStatement
from proxyplane.storage.models import ServiceIp
from proxyplane.storage.models.prefixes import IPV6_KIND
from proxyplane.storage.types import UTCDateTime

SAVEPOINT = "stock_take"


@dataclass(frozen=True)
class Allocated:
    ip_id: int
    address: str
    port: int | None
    country: str


def country_column(geo_source: str) -> str:
    return "country_ripe" if geo_source == "ripe" else "country_maxmind"


def pick_sql(
    segments: Sequence[tuple[str, int]], col: str, postgres: bool, wait: bool, exclude: bool
) -> tuple[str, dict[str, Any]]:
    """One `SELECT id FROM (... LIMIT n) UNION ALL ...` over the segments; its parameters."""
    params: dict[str, Any] = {}
    parts = []
    if postgres:
        lock = " FOR UPDATE" if wait else " FOR UPDATE SKIP LOCKED"
        order = "id" if wait else "assigned_count, id"
        skip = " AND id <> ALL(CAST(:exclude AS BIGINT[]))" if exclude else ""
    else:
        lock, order = "", "assigned_count, id"
        skip = " AND id NOT IN :exclude" if exclude else ""
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


async def take(
    session: AsyncSession,
    service_id: uuid.UUID,
    product_kind: str,
    geo_source: str,
    segments: Sequence[tuple[str, int]],
    *,
    postgres: bool,
    exclude: set[int] | frozenset[int] = frozenset(),
    wait: bool = False,
    now: datetime | None = None,
) -> list[Allocated]:
    """Take up to `count` IPs per (country, count) for the service, never one of `exclude`, and record
    them in service_ips. May return fewer than asked (not enough free slots, or rows skipped because
    another order holds them); the caller decides. Returned in ip id order (the service_ips order)."""
    wanted = [(c, n) for c, n in segments if n > 0]
    if not wanted:
        return []
    if product_kind == IPV6_KIND:  # subnets of routed prefixes (issue 16), not rows of stock_ips
        from proxyplane.domains.stock import subnets

        return await subnets.take(session, service_id, geo_source, wanted, postgres=postgres, now=now)
    col = country_column(geo_source)
    picks, params = pick_sql(wanted, col, postgres, wait, bool(exclude))
    now = now or utcnow()
    params["kind"] = product_kind
    update = (
        f"UPDATE stock_ips SET assigned_count = assigned_count + 1 WHERE {picked_ids(picks, postgres)}"
        f" AND assigned_count < capacity RETURNING id, address, port, {col} AS country"
    )
    if postgres:
        sql = (
            f"WITH picked AS ({update}), added AS (INSERT INTO service_ips"
            " (service_id, ip_id, address, port, country, allocated_at)"
            " SELECT :sid, id, address, port, country, :now FROM picked ORDER BY id)"
            " SELECT id, address, port, country FROM picked ORDER BY id"
        )
        params |= {"sid": service_id, "now": now}
        if exclude:
            params["exclude"] = sorted(exclude)
        rows = await _driver_statement(sql).rows(session, params)
        return [Allocated(int(r[0]), r[1], r[2], r[3]) for r in rows]
    if exclude:
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


def shortfall(segments: Sequence[tuple[str, int]], got: Sequence[Allocated]) -> list[tuple[str, int]]:
    """(country, still missing) for every segment not fully served by `got`."""
    have: dict[str, int] = {}
    for a in got:
        have[a.country] = have.get(a.country, 0) + 1
    missing = []
    for country, count in segments:
        served = min(count, have.get(country, 0))
        have[country] = have.get(country, 0) - served
        if served < count:
            missing.append((country, count - served))
    return missing


async def take_waiting(
    session: AsyncSession,
    service_id: uuid.UUID,
    product_kind: str,
    geo_source: str,
    segments: Sequence[tuple[str, int]],
    *,
    postgres: bool,
    exclude: set[int] | frozenset[int] = frozenset(),
) -> tuple[list[Allocated], list[tuple[str, int]]]:
    """The slow path: take what is missing, waiting for rows other orders hold (PostgreSQL), until every
    segment is served or no candidate is left. Returns (taken, still missing)."""
    taken: list[Allocated] = []
    seen = set(exclude)
    missing = [(c, n) for c, n in segments if n > 0]
    while missing:
        got = await take(
            session, service_id, product_kind, geo_source, missing, postgres=postgres, exclude=seen, wait=True
        )
        if not got:
            break
        taken += got
        seen.update(a.ip_id for a in got)
        missing = shortfall(missing, got)
    return taken, missing
