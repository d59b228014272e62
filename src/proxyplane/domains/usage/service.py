"""Usage of a service as metered by the gateway (tables usage_minutes / usage_errors).

A window [start, end) is resolved to whole minutes: a minute bucket counts when its start lies in
[start rounded down to the minute, end). Totals, the per-minute series, the top destinations, the
errors by category and the CSV export all read the same buckets, so they always agree. Totals, top
destinations and errors by category read whole days and hours from the rollups (usage_rollups,
usage_error_rollups, written with the minutes) and minutes only at the window's edges (windows.py),
as does the series per hour or day; the series per minute and the export read the minutes themselves.

With `subuser` (a sub-user's internal id) every read takes that sub-user's rows instead
(subuser_usage_minutes / subuser_usage_errors and their rollups, subuser_usage_exit_errors; same shapes
and the same windows).
"""

from __future__ import annotations

import csv
import io
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.core.clock import as_utc
from proxyplane.core.errors import ValidationFailed
from proxyplane.domains.usage.windows import DAY, HOUR, error_rows, floor, usage_rows
from proxyplane.storage.models.gateway import UsageMinute
from proxyplane.storage.models.gateway_health import UsageExitError
from proxyplane.storage.models.subuser_rollups import SubuserUsageExitError
from proxyplane.storage.models.subusers import SubuserUsageMinute

MAX_EXPORT_ROWS = 200_000
COUNTERS = ("requests", "connections", "bytes_up", "bytes_down", "errors")


@dataclass
class Totals:
    requests: int = 0
    connections: int = 0
    bytes_up: int = 0
    bytes_down: int = 0
    errors: int = 0
    errors_by_category: dict[str, int] = field(default_factory=dict)

    @classmethod
    def of(cls, values: Any) -> Totals:
        n = [int(v or 0) for v in values]
        return cls(requests=n[0], connections=n[1], bytes_up=n[2], bytes_down=n[3], errors=n[4])


def window(start: datetime, end: datetime) -> tuple[datetime, datetime]:
    start, end = as_utc(start), as_utc(end)
    if end <= start:
        raise ValidationFailed("end must be after start", field="end")
    return start.replace(second=0, microsecond=0), end


def _where(model: Any, service_id: uuid.UUID, start: datetime, end: datetime) -> list[Any]:
    return [model.service_id == service_id, model.minute >= start, model.minute < end]


def _minutes(
    service_id: uuid.UUID, subuser: int | None, start: datetime, end: datetime
) -> tuple[Any, list[Any]]:
    """(minute model, WHERE) of the service's minutes, or of one of its sub-users' (internal id)."""
    if subuser is None:
        return UsageMinute, _where(UsageMinute, service_id, start, end)
    m = SubuserUsageMinute
    return m, [m.subuser_pk == subuser, m.minute >= start, m.minute < end]


async def totals(
    session: AsyncSession,
    service_id: uuid.UUID,
    start: datetime,
    end: datetime,
    *,
    subuser: int | None = None,
) -> Totals:
    start, end = window(start, end)
    rows = usage_rows(service_id, start, end, COUNTERS, subuser=subuser)
    row = (await session.execute(select(*(func.coalesce(func.sum(rows.c[c]), 0) for c in COUNTERS)))).one()
    out = Totals.of(row)
    out.errors_by_category = await errors_by_category(session, service_id, start, end, subuser=subuser)
    return out


async def errors_by_category(
    session: AsyncSession,
    service_id: uuid.UUID,
    start: datetime,
    end: datetime,
    *,
    subuser: int | None = None,
) -> dict[str, int]:
    start, end = window(start, end)
    errors = error_rows(service_id, start, end, subuser)
    rows = await session.execute(
        select(errors.c.category, func.sum(errors.c.count))
        .group_by(errors.c.category)
        .order_by(errors.c.category)
    )
    return {c: int(n) for c, n in rows.all()}


async def errors_by_exit_ip(
    session: AsyncSession,
    service_id: uuid.UUID,
    start: datetime,
    end: datetime,
    *,
    subuser: int | None = None,
) -> dict[str, dict[str, int]]:
    """Upstream failures (connect, refused, timeout) per exit IP and category in the window (with
    `subuser`: that sub-user's, subuser_usage_exit_errors)."""
    start, end = window(start, end)
    e: Any = UsageExitError if subuser is None else SubuserUsageExitError
    owner = e.service_id == service_id if subuser is None else e.subuser_pk == subuser
    rows = await session.execute(
        select(e.exit_ip, e.category, func.sum(e.count))
        .where(owner, e.minute >= start, e.minute < end)
        .group_by(e.exit_ip, e.category)
        .order_by(e.exit_ip, e.category)
    )
    out: dict[str, dict[str, int]] = {}
    for ip, category, n in rows.all():
        out.setdefault(ip, {})[category] = int(n)
    return out


RESOLUTIONS = {"hour": HOUR, "day": DAY}


async def series(
    session: AsyncSession,
    service_id: uuid.UUID,
    start: datetime,
    end: datetime,
    resolution: str = "minute",
    *,
    subuser: int | None = None,
) -> list[tuple[datetime, Totals]]:
    """Totals per minute, or per UTC hour or day (each point at its bucket's start; the first and last
    buckets count only the window's minutes). Buckets without traffic are left out."""
    start, end = window(start, end)
    if resolution in RESOLUTIONS:
        step = RESOLUTIONS[resolution]
        u = usage_rows(service_id, start, end, COUNTERS, at=True, largest=step, subuser=subuser)
        rows = await session.execute(
            select(u.c.at, *(func.sum(u.c[c]) for c in COUNTERS)).group_by(u.c.at).order_by(u.c.at)
        )
        points: dict[datetime, list[int]] = {}
        for at, *vals in rows.all():
            point = points.setdefault(floor(as_utc(at), step), [0] * len(COUNTERS))
            for i, v in enumerate(vals):
                point[i] += int(v or 0)
        return [(at, Totals.of(vals)) for at, vals in points.items()]
    m, where = _minutes(service_id, subuser, start, end)
    sums = [func.sum(getattr(m, c)) for c in COUNTERS]
    rows = await session.execute(select(m.minute, *sums).where(*where).group_by(m.minute).order_by(m.minute))
    return [(as_utc(m), Totals.of(vals)) for m, *vals in rows.all()]


async def top_destinations(
    session: AsyncSession,
    service_id: uuid.UUID,
    start: datetime,
    end: datetime,
    limit: int,
    *,
    subuser: int | None = None,
) -> list[tuple[str, Totals]]:
    """Destination hosts by bytes (up + down), then requests."""
    start, end = window(start, end)
    u = usage_rows(service_id, start, end, ("host", *COUNTERS), subuser=subuser)
    traffic = func.sum(u.c.bytes_up + u.c.bytes_down)
    rows = await session.execute(
        select(u.c.host, *(func.sum(u.c[c]) for c in COUNTERS))
        .group_by(u.c.host)
        .order_by(traffic.desc(), func.sum(u.c.requests).desc(), u.c.host)
        .limit(limit)
    )
    return [(host, Totals.of(vals)) for host, *vals in rows.all()]


async def export_csv(
    session: AsyncSession,
    service_id: uuid.UUID,
    start: datetime,
    end: datetime,
    *,
    subuser: int | None = None,
) -> tuple[str, int]:
    """CSV per minute and destination host: minute,host,requests,connections,bytes_up,bytes_down,errors.
    Column sums equal `totals` for the same window. Returns (csv text, data rows)."""
    start, end = window(start, end)
    if end - start > timedelta(days=93):
        raise ValidationFailed("an export covers at most 93 days; split the window", field="end")
    m, where = _minutes(service_id, subuser, start, end)
    rows = await session.execute(
        select(m).where(*where).order_by(m.minute, m.host).limit(MAX_EXPORT_ROWS + 1)
    )
    items = list(rows.scalars())
    if len(items) > MAX_EXPORT_ROWS:
        raise ValidationFailed(f"more than {MAX_EXPORT_ROWS} rows; export a shorter window", field="end")
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(["minute", "host", *COUNTERS])
    for r in items:
        minute = as_utc(r.minute).strftime("%Y-%m-%dT%H:%M:%SZ")
        writer.writerow([minute, r.host, *(getattr(r, c) for c in COUNTERS)])
    return buf.getvalue(), len(items)
