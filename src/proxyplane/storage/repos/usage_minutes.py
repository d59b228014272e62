"""The one writer of the services' usage tables: `usage_minutes`, `usage_errors`, their hourly/daily
rollups (`usage_rollups`, `usage_error_rollups`) and `usage_exit_errors` (gateway/usage_sink.py builds the
rows of a flush). Every write is the additive upsert ``ON CONFLICT ... DO UPDATE SET n = table.n +
excluded.n`` (SQLite's or PostgreSQL's INSERT, chosen here from the session), one statement per BATCH
rows, so several nodes and several flushes within one minute sum up exactly."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.storage.engine_choice import dialect_name
from proxyplane.storage.models.gateway import UsageError, UsageMinute
from proxyplane.storage.models.gateway_health import UsageExitError
from proxyplane.storage.models.usage_rollups import UsageErrorRollup, UsageRollup
from proxyplane.storage.rollups import rollup_values

BATCH = 400
COUNTERS = ("requests", "connections", "bytes_up", "bytes_down", "errors")


async def upsert(
    session: AsyncSession,
    insert: Any,
    model: Any,
    values: list[dict[str, Any]],
    keys: list[str],
    counters: Iterable[str],
) -> None:
    """Add `values` to the table's rows, one statement per BATCH rows."""
    table = model.__table__
    for i in range(0, len(values), BATCH):
        stmt = insert(model).values(values[i : i + BATCH])
        stmt = stmt.on_conflict_do_update(
            index_elements=keys, set_={c: table.c[c] + stmt.excluded[c] for c in counters}
        )
        await session.execute(stmt)


def _insert(session: AsyncSession) -> Any:
    return sqlite_insert if dialect_name(session) == "sqlite" else pg_insert


async def add_usage(
    session: AsyncSession, minutes: list[dict[str, Any]], errors: list[dict[str, Any]]
) -> None:
    """Add minute rows (usage_minutes values) and error rows (usage_errors values) to their tables AND
    to the hourly/daily rollups, by the same additive upsert, in the caller's transaction. Every writer
    of the minute tables goes through here (tests/domains/usage/test_rollup_writers.py checks the
    source), so a rollup bucket always equals the sum of its minutes."""
    insert = _insert(session)
    await upsert(session, insert, UsageMinute, minutes, ["service_id", "minute", "host"], COUNTERS)
    await upsert(
        session,
        insert,
        UsageRollup,
        rollup_values(minutes, "host", COUNTERS),
        ["service_id", "span", "bucket", "host"],
        COUNTERS,
    )
    await upsert(session, insert, UsageError, errors, ["service_id", "minute", "host", "category"], ["count"])
    await upsert(
        session,
        insert,
        UsageErrorRollup,
        rollup_values(errors, "category", ("count",)),
        ["service_id", "span", "bucket", "category"],
        ["count"],
    )


async def add_exit_errors(session: AsyncSession, values: list[dict[str, Any]]) -> None:
    """Add exit-IP failure rows (service, minute, exit IP, category, count) to usage_exit_errors."""
    await upsert(
        session,
        _insert(session),
        UsageExitError,
        values,
        ["service_id", "minute", "exit_ip", "category"],
        ["count"],
    )
