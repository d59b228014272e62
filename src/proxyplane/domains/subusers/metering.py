"""Metering of sub-users' usage, called by the gateway's usage sink inside its flush transaction.

apply_usage() adds a flush's per-sub-user minute and error rows to subuser_usage_minutes /
subuser_usage_errors, the same counts summed per hour and day to subuser_usage_rollups /
subuser_usage_error_rollups, and the exit-IP failures to subuser_usage_exit_errors (additive upserts,
like gateway/usage_sink.add_usage: several nodes and flushes of one minute sum up exactly, and a rollup
bucket always equals the sum of its minutes; it is the one writer of these tables, which
tests/domains/usage/test_rollup_writers.py checks in the source), then moves the sub-users' counters
and thresholds, in a number of statements that does not grow with the number of sub-users (one per
BATCH):

1. `used_bytes += up + down`, `used_requests += requests` (PostgreSQL: UPDATE ... FROM unnest(three
   arrays), one cached statement; SQLite: one UPDATE with CASE id ... per counter);
2. per threshold (80, then 100), one UPDATE of the flushed sub-users whose usage level (80 or 100 % of
   either limit) reached it while notified_pct is below it: it sets notified_pct (and limit_reached at
   100) and RETURNs those rows. The WHERE is re-checked on the latest row version under concurrent
   flushes (PostgreSQL) or run by the single writer (SQLite), so each crossing is returned, hence
   notified, once;
3. only when some row crossed: the owners' customer ids, and `subuser.usage_80` / `subuser.usage_100`
   events (webhook deliveries) per customer.

A counter-only UPDATE logs no gateway change (migration 0018b); setting limit_reached does, so every node
refuses the sub-user within its poll/NOTIFY interval.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from sqlalchemy import BigInteger, any_, bindparam, case, cast, select, text, update
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.domains.events.service import emit_many
from proxyplane.storage.models import Service
from proxyplane.storage.models.subuser_rollups import (
    SubuserUsageErrorRollup,
    SubuserUsageExitError,
    SubuserUsageRollup,
)
from proxyplane.storage.models.subusers import ServiceSubuser, SubuserUsageError, SubuserUsageMinute
from proxyplane.storage.rollups import rollup_values

BATCH = 400  # SQLite: sub-users per UPDATE (bound parameters)
COUNTERS = ("requests", "connections", "bytes_up", "bytes_down", "errors")
EVENTS = {80: "subuser.usage_80", 100: "subuser.usage_100"}

S = ServiceSubuser.__table__.c
NO_SYNC = {"synchronize_session": False}
PG_ADD = text(
    "UPDATE service_subusers AS s SET used_bytes = s.used_bytes + v.b, used_requests = s.used_requests + v.r "
    "FROM unnest(CAST(:pks AS bigint[]), CAST(:bs AS bigint[]), CAST(:rs AS bigint[])) AS v(pk, b, r) "
    "WHERE s.id = v.pk"
)  # core-style UPDATEs: no ORM objects to refresh


def level_expr() -> Any:
    """SQL: the usage level of a sub-user row: 100 when a limit is reached, 80 from 80 % of one, else 0."""

    def over(used: Any, limit: Any, num: int, den: int) -> Any:
        return limit.is_not(None) & (used * den >= limit * num)

    full = over(S.used_bytes, S.traffic_limit_bytes, 1, 1) | over(
        S.used_requests, S.traffic_limit_requests, 1, 1
    )
    most = over(S.used_bytes, S.traffic_limit_bytes, 4, 5) | over(
        S.used_requests, S.traffic_limit_requests, 4, 5
    )
    return case((full, 100), (most, 80), else_=0)


async def _upsert(
    session: AsyncSession,
    sqlite: bool,
    model: Any,
    rows: list[dict[str, Any]],
    keys: list[str],
    counters: tuple[str, ...],
) -> None:
    if not rows:
        return
    insert = sqlite_insert if sqlite else pg_insert
    table = model.__table__
    stmt = insert(table)
    stmt = stmt.on_conflict_do_update(
        index_elements=keys, set_={c: table.c[c] + stmt.excluded[c] for c in counters}
    )
    # executemany of one cached statement: the driver sends multi-row batches ("insertmanyvalues")
    await session.execute(stmt, rows)


def totals(minutes: list[dict[str, Any]]) -> dict[int, tuple[int, int]]:
    """Per sub-user pk: (bytes up + down, requests) of a flush."""
    out: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    for row in minutes:
        t = out[int(row["subuser_pk"])]
        t[0] += int(row["bytes_up"]) + int(row["bytes_down"])
        t[1] += int(row["requests"])
    return {pk: (b, r) for pk, (b, r) in out.items() if b or r}


async def _add_counters(session: AsyncSession, sqlite: bool, items: list[tuple[int, int, int]]) -> None:
    if sqlite:
        pks = [pk for pk, _b, _r in items]
        byte_case = case({pk: b for pk, b, _r in items}, value=S.id, else_=0)
        req_case = case({pk: r for pk, _b, r in items}, value=S.id, else_=0)
        await session.execute(
            update(ServiceSubuser)
            .where(S.id.in_(pks))
            .values(used_bytes=S.used_bytes + byte_case, used_requests=S.used_requests + req_case),
            execution_options=NO_SYNC,
        )
        return
    # one cached statement whatever the batch: the rows travel as three arrays
    await session.execute(
        PG_ADD,
        {
            "pks": [pk for pk, _b, _r in items],
            "bs": [b for _pk, b, _r in items],
            "rs": [r for _pk, _b, r in items],
        },
    )


async def _crossings(session: AsyncSession, sqlite: bool, pks: list[int], pct: int) -> list[Any]:
    """Raise notified_pct to `pct` on the sub-users whose level reached it (and set limit_reached at
    100 %); the rows that moved."""
    level = level_expr()
    values_: dict[str, Any] = {"notified_pct": pct}
    if pct == 100:
        values_["limit_reached"] = True
    stmt = (
        update(ServiceSubuser)
        .where(
            S.id.in_(pks) if sqlite else S.id == any_(cast(bindparam("pks", pks), ARRAY(BigInteger))),
            level >= pct,
            S.notified_pct < pct,
        )
        .values(**values_)
        .returning(
            S.subuser_id,
            S.service_id,
            S.login,
            S.notified_pct,
            S.used_bytes,
            S.used_requests,
            S.traffic_limit_bytes,
            S.traffic_limit_requests,
        )
    )
    return list((await session.execute(stmt, execution_options=NO_SYNC)).all())


def event_data(row: Any) -> dict[str, Any]:
    return {
        "subuser_id": str(row.subuser_id),
        "service_id": str(row.service_id),
        "login": row.login,
        "threshold_pct": row.notified_pct,
        "used_bytes": row.used_bytes,
        "used_requests": row.used_requests,
        "traffic_limit_bytes": row.traffic_limit_bytes,
        "traffic_limit_requests": row.traffic_limit_requests,
    }


async def _notify(session: AsyncSession, crossed: list[Any]) -> None:
    services = {row.service_id for row in crossed}
    owners = dict(
        (
            await session.execute(
                select(Service.service_id, Service.customer_id).where(Service.service_id.in_(services))
            )
        ).all()
    )
    per_customer: dict[int, list[tuple[str, dict[str, Any]]]] = defaultdict(list)
    for row in crossed:
        customer = owners.get(row.service_id)
        if customer is not None:
            per_customer[customer].append((EVENTS[row.notified_pct], event_data(row)))
    for customer, items in per_customer.items():
        await emit_many(session, customer, items)


async def apply_usage(
    session: AsyncSession,
    sqlite: bool,
    minutes: list[dict[str, Any]],
    errors: list[dict[str, Any]],
    exit_errors: list[dict[str, Any]] | None = None,
) -> None:
    """Add a flush's sub-user rows (see the module doc) in the caller's transaction; never commits.
    minutes: {"subuser_pk", "minute", "host", "requests", "connections", "bytes_up", "bytes_down",
    "errors"}; errors: {"subuser_pk", "minute", "host", "category", "count"}; exit_errors:
    {"subuser_pk", "minute", "exit_ip", "category", "count"}; one row per key in each list."""
    minute_key, error_key = ["subuser_pk", "minute", "host"], ["subuser_pk", "minute", "host", "category"]
    rollup_key = ["subuser_pk", "span", "bucket"]
    await _upsert(session, sqlite, SubuserUsageMinute, minutes, minute_key, COUNTERS)
    rollups = rollup_values(minutes, "host", COUNTERS, owner="subuser_pk")
    await _upsert(session, sqlite, SubuserUsageRollup, rollups, [*rollup_key, "host"], COUNTERS)
    await _upsert(session, sqlite, SubuserUsageError, errors, error_key, ("count",))
    error_rollups = rollup_values(errors, "category", ("count",), owner="subuser_pk")
    await _upsert(
        session, sqlite, SubuserUsageErrorRollup, error_rollups, [*rollup_key, "category"], ("count",)
    )
    exit_key = ["subuser_pk", "minute", "exit_ip", "category"]
    await _upsert(session, sqlite, SubuserUsageExitError, exit_errors or [], exit_key, ("count",))
    items = sorted((pk, b, r) for pk, (b, r) in totals(minutes).items())
    step = BATCH if sqlite else max(len(items), 1)  # PostgreSQL: arrays, any size in one statement
    for i in range(0, len(items), step):
        chunk = items[i : i + step]
        await _add_counters(session, sqlite, chunk)
        pks = [pk for pk, _b, _r in chunk]
        # 80 then 100: a flush that jumps past 80 % straight to the limit sends both, in order
        crossed = [*await _crossings(session, sqlite, pks, 80), *await _crossings(session, sqlite, pks, 100)]
        if crossed:
            await _notify(session, crossed)
