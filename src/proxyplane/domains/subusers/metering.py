"""Metering of sub-users' usage, called by the gateway's usage sink inside its flush transaction (the
statements, on the session's engine: storage/repos/subuser_usage.py, their one writer).

apply_usage() adds a flush's per-sub-user minute and error rows to subuser_usage_minutes /
subuser_usage_errors, the same counts summed per hour and day to subuser_usage_rollups /
subuser_usage_error_rollups, and the exit-IP failures to subuser_usage_exit_errors (additive upserts,
like gateway/usage_sink.add_usage: several nodes and flushes of one minute sum up exactly, and a rollup
bucket always equals the sum of its minutes; storage/repos/subuser_usage.py is the one writer of these
tables, which tests/domains/usage/test_rollup_writers.py checks in the source), then moves the sub-users'
counters and thresholds, in a number of statements that does not grow with the number of sub-users (one
per BATCH):

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

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.domains.events.service import emit_many
from proxyplane.storage.models import Service
from proxyplane.storage.repos import subuser_usage as repo

EVENTS = {80: "subuser.usage_80", 100: "subuser.usage_100"}


def totals(minutes: list[dict[str, Any]]) -> dict[int, tuple[int, int]]:
    """Per sub-user pk: (bytes up + down, requests) of a flush."""
    out: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    for row in minutes:
        t = out[int(row["subuser_pk"])]
        t[0] += int(row["bytes_up"]) + int(row["bytes_down"])
        t[1] += int(row["requests"])
    return {pk: (b, r) for pk, (b, r) in out.items() if b or r}


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
    minutes: list[dict[str, Any]],
    errors: list[dict[str, Any]],
    exit_errors: list[dict[str, Any]] | None = None,
) -> None:
    """Add a flush's sub-user rows (see the module doc) in the caller's transaction; never commits.
    minutes: {"subuser_pk", "minute", "host", "requests", "connections", "bytes_up", "bytes_down",
    "errors"}; errors: {"subuser_pk", "minute", "host", "category", "count"}; exit_errors:
    {"subuser_pk", "minute", "exit_ip", "category", "count"}; one row per key in each list."""
    await repo.add_rows(session, minutes, errors, exit_errors or [])
    items = sorted((pk, b, r) for pk, (b, r) in totals(minutes).items())
    step = repo.counter_batch(session, len(items))
    for i in range(0, len(items), step):
        chunk = items[i : i + step]
        await repo.add_counters(session, chunk)
        pks = [pk for pk, _b, _r in chunk]
        # 80 then 100: a flush that jumps past 80 % straight to the limit sends both, in order
        crossed = [*await repo.crossings(session, pks, 80), *await repo.crossings(session, pks, 100)]
        if crossed:
            await _notify(session, crossed)
