"""The one writer of the sub-users' metered rows (subuser_usage_minutes, subuser_usage_errors, their hourly
and daily rollups, subuser_usage_exit_errors) and of their counters and thresholds in `service_subusers`
(issue 31: the statements of domains/subusers/metering.apply_usage, which says when; moved unchanged).

The engine is the session's (storage/engine_choice.py): the rows go in as the dialect's additive upsert
(one cached statement per table, executemany); the counters move in one statement per batch (PostgreSQL:
UPDATE ... FROM unnest(three arrays), any number of sub-users; SQLite: one UPDATE with CASE id ... per
counter, BATCH sub-users); each threshold is one UPDATE ... RETURNING of the rows that crossed it.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import BigInteger, any_, bindparam, case, cast, text, update
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.storage.engine_choice import is_postgres
from proxyplane.storage.models.subuser_rollups import (
    SubuserUsageErrorRollup,
    SubuserUsageExitError,
    SubuserUsageRollup,
)
from proxyplane.storage.models.subusers import ServiceSubuser, SubuserUsageError, SubuserUsageMinute
from proxyplane.storage.rollups import rollup_values

BATCH = 400  # SQLite: sub-users per UPDATE (bound parameters)
COUNTERS = ("requests", "connections", "bytes_up", "bytes_down", "errors")

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


async def add_rows(
    session: AsyncSession,
    minutes: list[dict[str, Any]],
    errors: list[dict[str, Any]],
    exit_errors: list[dict[str, Any]],
) -> None:
    """A flush's minute, error and exit-error rows added to the counts of their keys, and the same counts
    summed per hour and day to the rollups (a rollup bucket always equals the sum of its minutes)."""
    sqlite = not is_postgres(session)
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
    await _upsert(session, sqlite, SubuserUsageExitError, exit_errors, exit_key, ("count",))


def counter_batch(session: AsyncSession, count: int) -> int:
    """How many sub-users one `add_counters` / `crossings` call takes: BATCH on SQLite (bound
    parameters), all `count` on PostgreSQL (arrays, any size in one statement)."""
    return max(count, 1) if is_postgres(session) else BATCH


async def add_counters(session: AsyncSession, items: list[tuple[int, int, int]]) -> None:
    """`used_bytes += bytes`, `used_requests += requests` per (sub-user pk, bytes, requests), in one
    statement (at most `counter_batch` items)."""
    if not is_postgres(session):
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


async def crossings(session: AsyncSession, pks: list[int], pct: int) -> list[Any]:
    """Raise notified_pct to `pct` on the sub-users whose level reached it (and set limit_reached at
    100 %); the rows that moved (subuser_id, service_id, login, notified_pct, used and limits)."""
    sqlite = not is_postgres(session)
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
