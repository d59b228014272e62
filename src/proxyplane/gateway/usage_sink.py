"""The usage sink of a store-backed gateway: metered rows written in batches with upserts.

``usage_minutes`` and ``usage_errors`` are keyed (service, minute, host[, category]); a flush adds its
counts to existing rows (``ON CONFLICT ... DO UPDATE SET n = table.n + excluded.n`` on SQLite and
PostgreSQL alike), so several nodes and several flushes within one minute sum up exactly. The same
flush adds the same counts, summed per hour and per day, to ``usage_rollups`` and
``usage_error_rollups`` in the same transaction and by the same additive upsert, so every bucket always
equals the sum of its minutes. One statement per table per BATCH rows. This module builds the rows;
storage/repos/usage_minutes.py writes them.

The upstream suppliers' rows of a batch (metering id ``"upstream:<id>"``, metering.supplier) are added
to ``upstream_usage`` per UTC hour in the same transaction (storage/repos/upstreams.add_usage), so the
margin report's cost is spooled and applied exactly once like the customers' usage.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import proxyplane.domains.quotas.metering as quota_metering
from proxyplane.domains.subusers.metering import apply_usage
from proxyplane.storage.engine import Database
from proxyplane.storage.repos import upstreams as upstream_repo
from proxyplane.storage.repos import usage_batches, usage_minutes
from proxyplane.storage.repos.usage_minutes import COUNTERS

from .metering import SUPPLIER, SUPPLIER_FAILED, UsageRow, UsageSink, supplier_rows
from .subusers import split_id

HOST_MAX = 255


def _service_uuid(value: str) -> uuid.UUID | None:
    """The service of a metering id: a service id, or a sub-user's "<service id>/<pk>" (its traffic is
    the service's too: the service's usage = its own login's + its sub-users')."""
    try:
        return uuid.UUID(value.partition("/")[0])
    except ValueError:
        return None


def _subuser_pk(value: str) -> int | None:
    """The sub-user's internal id of a metering id "<service id>/<pk>"; None for a service's own login."""
    return split_id(value)[1] if "/" in value else None


Owner = Callable[[str], Any]


def _values(
    rows: list[UsageRow], owner: str, owner_of: Owner
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(minute rows, error rows) keyed by `owner` (the column, e.g. service_id) = owner_of(metering id),
    merged per key (the meter may hold a row twice after a failed flush was restored); rows whose owner
    is None are left out."""
    minutes: dict[tuple[Any, ...], dict[str, Any]] = {}
    errors: dict[tuple[Any, ...], dict[str, Any]] = {}
    for row in rows:
        who = owner_of(row.service_id)
        if who is None:
            continue
        host = row.host[:HOST_MAX]
        key = (who, row.minute, host)
        m = minutes.setdefault(
            key, {owner: who, "minute": row.minute, "host": host} | dict.fromkeys(COUNTERS, 0)
        )
        m["requests"] += row.requests
        m["connections"] += row.connections
        m["bytes_up"] += row.bytes_up
        m["bytes_down"] += row.bytes_down
        for category, n in row.errors.items():
            m["errors"] += n
            e = errors.setdefault(
                (*key, category),
                {owner: who, "minute": row.minute, "host": host, "category": category[:40], "count": 0},
            )
            e["count"] += n
    return list(minutes.values()), list(errors.values())


def _exit_values(rows: list[UsageRow], owner: str, owner_of: Owner) -> list[dict[str, Any]]:
    """Exit-IP failure rows (`owner`, minute, exit IP, category), merged per key."""
    out: dict[tuple[Any, ...], dict[str, Any]] = {}
    for row in rows:
        who = owner_of(row.service_id) if row.exit_errors else None
        if who is None:
            continue
        for (exit_ip, category), n in row.exit_errors.items():
            value = out.setdefault(
                (who, row.minute, exit_ip, category),
                {
                    owner: who,
                    "minute": row.minute,
                    "exit_ip": exit_ip[:45],
                    "category": category[:40],
                    "count": 0,
                },
            )
            value["count"] += n
    return list(out.values())


def usage_values(rows: list[UsageRow]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(usage_minutes rows, usage_errors rows) of the services (a sub-user's rows count for its service)."""
    return _values(rows, "service_id", _service_uuid)


def subuser_values(rows: list[UsageRow]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(subuser_usage_minutes rows, subuser_usage_errors rows) of the sub-users' metered rows (metering
    id "<service id>/<pk>"): the rows domains/subusers/metering.apply_usage takes."""
    return _values(rows, "subuser_pk", _subuser_pk)


def exit_error_values(rows: list[UsageRow]) -> list[dict[str, Any]]:
    """usage_exit_errors rows (service, minute, exit IP, category), merged per key."""
    return _exit_values(rows, "service_id", _service_uuid)


def subuser_exit_error_values(rows: list[UsageRow]) -> list[dict[str, Any]]:
    """subuser_usage_exit_errors rows (sub-user, minute, exit IP, category), merged per key."""
    return _exit_values(rows, "subuser_pk", _subuser_pk)


def supplier_deltas(rows: list[UsageRow]) -> list[upstream_repo.UsageDelta]:
    """upstream_usage deltas (upstream, UTC hour, up, down, tunnels, failures) of the suppliers' rows,
    merged per key; a row whose id is not an upstream uuid is left out (none is ever written so)."""
    out: dict[tuple[uuid.UUID, datetime], list[int]] = {}
    for row in rows:
        try:
            upstream_id = uuid.UUID(row.service_id.removeprefix(SUPPLIER))
        except ValueError:
            continue
        hour = row.minute.replace(minute=0, second=0, microsecond=0)
        counts = out.setdefault((upstream_id, hour), [0, 0, 0, 0])
        counts[0] += row.bytes_up
        counts[1] += row.bytes_down
        counts[2] += row.connections
        counts[3] += row.errors.get(SUPPLIER_FAILED, 0)
    return [(u, hour, up, down, t, f) for (u, hour), (up, down, t, f) in out.items()]


async def _add_rows(s: Any, rows: list[UsageRow], now: datetime | None = None) -> None:
    rows, suppliers = supplier_rows(rows)
    if suppliers:  # the upstream suppliers' counts (issue 36.4): the margin report's cost
        await upstream_repo.add_usage(s, supplier_deltas(suppliers))
    minutes, errors = usage_values(rows)
    exit_errors = exit_error_values(rows)
    sub_minutes, sub_errors = subuser_values(rows)
    sub_exit = subuser_exit_error_values(rows)
    await usage_minutes.add_usage(s, minutes, errors)
    await quota_metering.apply_usage(s, minutes, now)  # the services' quotas, periods, top-ups (issue 32)
    await usage_minutes.add_exit_errors(s, exit_errors)
    if sub_minutes or sub_errors or sub_exit:  # the sub-users' rows, counters, limit events (issue 18)
        await apply_usage(s, sub_minutes, sub_errors, sub_exit)


async def write_usage(db: Database, rows: list[UsageRow], now: datetime | None = None) -> None:
    """Add `rows` in one transaction; `now` (default: the clock) is the flush's time for the quotas' periods
    and the pay-as-you-go hour (a test passes one to stay off the wall clock's hour boundaries)."""
    async with db.unit_of_work(write=True) as uow:
        await _add_rows(uow.session, rows, now)
        await uow.commit()


async def write_batches(db: Database, batches: list[tuple[str, list[UsageRow]]]) -> set[str]:
    """Add the rows of the spooled batches not applied yet (issue 35), claiming their ids in the same
    transaction (storage/repos/usage_batches.claim): a batch replayed after a lost acknowledgement, a
    crash or by a second worker adds nothing. Returns the ids applied now."""
    now = datetime.now(UTC)
    async with db.unit_of_work(write=True) as uow:
        fresh = await usage_batches.claim(uow.session, [b for b, _ in batches], now)
        rows = [row for batch_id, batch in batches if batch_id in fresh for row in batch]
        if rows:
            await _add_rows(uow.session, rows)
        if now.minute == 0 and now.second < 2:  # about once an hour per writer
            await usage_batches.prune(uow.session, now)
        await uow.commit()
    return fresh


def store_sink(db: Database) -> UsageSink:
    async def sink(rows: list[UsageRow]) -> None:
        await write_usage(db, rows)

    return sink
