"""The usage sink of a store-backed gateway: metered rows written in batches with upserts.

``usage_minutes`` and ``usage_errors`` are keyed (service, minute, host[, category]); a flush adds its
counts to existing rows (``ON CONFLICT ... DO UPDATE SET n = table.n + excluded.n`` on SQLite and
PostgreSQL alike), so several nodes and several flushes within one minute sum up exactly. The same
flush adds the same counts, summed per hour and per day, to ``usage_rollups`` and
``usage_error_rollups`` in the same transaction and by the same additive upsert, so every bucket always
equals the sum of its minutes. One statement per table per BATCH rows.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from proxyplane.domains.subusers.metering import apply_usage
from proxyplane.storage.engine import Database
from proxyplane.storage.models.gateway import UsageError, UsageMinute
from proxyplane.storage.models.gateway_health import UsageExitError
from proxyplane.storage.models.usage_rollups import SPANS, UsageErrorRollup, UsageRollup

from .metering import UsageRow, UsageSink
from .subusers import split_id

BATCH = 400
COUNTERS = ("requests", "connections", "bytes_up", "bytes_down", "errors")
HOST_MAX = 255


def _service_uuid(value: str) -> uuid.UUID | None:
    """The service of a metering id: a service id, or a sub-user's "<service id>/<pk>" (its traffic is
    the service's too: the service's usage = its own login's + its sub-users')."""
    try:
        return uuid.UUID(value.partition("/")[0])
    except ValueError:
        return None


def subuser_values(rows: list[UsageRow]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(subuser_usage_minutes rows, subuser_usage_errors rows) of the sub-users' metered rows (metering
    id "<service id>/<pk>"), merged per key: the rows domains/subusers/metering.apply_usage takes."""
    minutes: dict[tuple[Any, ...], dict[str, Any]] = {}
    errors: dict[tuple[Any, ...], dict[str, Any]] = {}
    for row in rows:
        pk = split_id(row.service_id)[1] if "/" in row.service_id else None
        if pk is None:
            continue
        host = row.host[:HOST_MAX]
        key = (pk, row.minute, host)
        m = minutes.setdefault(
            key, {"subuser_pk": pk, "minute": row.minute, "host": host, **dict.fromkeys(COUNTERS, 0)}
        )
        m["requests"] += row.requests
        m["connections"] += row.connections
        m["bytes_up"] += row.bytes_up
        m["bytes_down"] += row.bytes_down
        for category, n in row.errors.items():
            m["errors"] += n
            e = errors.setdefault(
                (*key, category),
                {"subuser_pk": pk, "minute": row.minute, "host": host, "category": category[:40], "count": 0},
            )
            e["count"] += n
    return list(minutes.values()), list(errors.values())


def usage_values(rows: list[UsageRow]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(usage_minutes rows, usage_errors rows), merged per key (the meter may hold a row twice after a
    failed flush was restored)."""
    minutes: dict[tuple[Any, ...], dict[str, Any]] = {}
    errors: dict[tuple[Any, ...], dict[str, Any]] = {}
    for row in rows:
        sid = _service_uuid(row.service_id)
        if sid is None:
            continue
        host = row.host[:HOST_MAX]
        key = (sid, row.minute, host)
        m = minutes.setdefault(
            key, {"service_id": sid, "minute": row.minute, "host": host, **dict.fromkeys(COUNTERS, 0)}
        )
        m["requests"] += row.requests
        m["connections"] += row.connections
        m["bytes_up"] += row.bytes_up
        m["bytes_down"] += row.bytes_down
        for category, n in row.errors.items():
            m["errors"] += n
            e = errors.setdefault(
                (*key, category),
                {
                    "service_id": sid,
                    "minute": row.minute,
                    "host": host,
                    "category": category[:40],
                    "count": 0,
                },
            )
            e["count"] += n
    return list(minutes.values()), list(errors.values())


def exit_error_values(rows: list[UsageRow]) -> list[dict[str, Any]]:
    """usage_exit_errors rows (service, minute, exit IP, category), merged per key."""
    out: dict[tuple[Any, ...], dict[str, Any]] = {}
    for row in rows:
        sid = _service_uuid(row.service_id) if row.exit_errors else None
        if sid is None:
            continue
        for (exit_ip, category), n in row.exit_errors.items():
            key = (sid, row.minute, exit_ip, category)
            value = out.setdefault(
                key,
                {
                    "service_id": sid,
                    "minute": row.minute,
                    "exit_ip": exit_ip[:45],
                    "category": category[:40],
                    "count": 0,
                },
            )
            value["count"] += n
    return list(out.values())


def bucket(minute: datetime, span: str) -> datetime:
    """UTC start of the hour ("h") or day ("d") holding a minute."""
    if span == "h":
        return minute.replace(minute=0, second=0, microsecond=0)
    return minute.replace(hour=0, minute=0, second=0, microsecond=0)


def rollup_values(values: list[dict[str, Any]], key: str, counters: tuple[str, ...]) -> list[dict[str, Any]]:
    """Minute rows (usage_minutes or usage_errors values) summed per (service, span, bucket, `key`)."""
    out: dict[tuple[Any, ...], dict[str, Any]] = {}
    for row in values:
        for span in SPANS:
            b = bucket(row["minute"], span)
            r = out.setdefault(
                (row["service_id"], span, b, row[key]),
                {"service_id": row["service_id"], "span": span, "bucket": b, key: row[key]}
                | dict.fromkeys(counters, 0),
            )
            for c in counters:
                r[c] += row[c]
    return list(out.values())


async def upsert(
    session: Any, insert: Any, model: Any, values: list[dict[str, Any]], keys: list[str], counters: Any
) -> None:
    """Add `values` to the table's rows, one statement per BATCH rows."""
    table = model.__table__
    for i in range(0, len(values), BATCH):
        stmt = insert(model).values(values[i : i + BATCH])
        stmt = stmt.on_conflict_do_update(
            index_elements=keys, set_={c: table.c[c] + stmt.excluded[c] for c in counters}
        )
        await session.execute(stmt)


async def add_usage(
    session: Any, sqlite: bool, minutes: list[dict[str, Any]], errors: list[dict[str, Any]]
) -> None:
    """Add minute rows (usage_minutes values) and error rows (usage_errors values) to their tables AND
    to the hourly/daily rollups, by the same additive upsert, in the caller's transaction. Every writer
    of the minute tables goes through here (tests/domains/usage/test_rollup_writers.py checks the
    source), so a rollup bucket always equals the sum of its minutes."""
    insert = sqlite_insert if sqlite else pg_insert
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


async def write_usage(db: Database, rows: list[UsageRow]) -> None:
    minutes, errors = usage_values(rows)
    exit_errors = exit_error_values(rows)
    sub_minutes, sub_errors = subuser_values(rows)
    insert = sqlite_insert if db.is_sqlite else pg_insert
    async with db.unit_of_work(write=True) as uow:
        s = uow.session
        await add_usage(s, db.is_sqlite, minutes, errors)
        await upsert(
            s, insert, UsageExitError, exit_errors, ["service_id", "minute", "exit_ip", "category"], ["count"]
        )
        if sub_minutes or sub_errors:  # the sub-users' rows, counters and limit events (issue 18)
            await apply_usage(s, db.is_sqlite, sub_minutes, sub_errors)
        await uow.commit()


def store_sink(db: Database) -> UsageSink:
    async def sink(rows: list[UsageRow]) -> None:
        await write_usage(db, rows)

    return sink
