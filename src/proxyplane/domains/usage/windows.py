"""A usage window split by resolution (a service's usage, or one sub-user's): whole UTC days and hours
from the rollups, minutes only at the ragged edges, so a read touches at most ~ (days + 2 x 23 hours
+ 2 x 59 minutes) buckets per key whatever the window's length, and still counts exactly the minute
buckets of [start, end).

The union of the parts read is exactly the minutes m with start <= m < end (start already floored to
the minute): the parts are disjoint and each hour or day bucket lies wholly inside the window.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import and_, or_, select, union_all

from proxyplane.storage.models.gateway import UsageError, UsageMinute
from proxyplane.storage.models.subuser_rollups import SubuserUsageErrorRollup, SubuserUsageRollup
from proxyplane.storage.models.subusers import SubuserUsageError, SubuserUsageMinute
from proxyplane.storage.models.usage_rollups import UsageErrorRollup, UsageRollup

MINUTE, HOUR, DAY = timedelta(minutes=1), timedelta(hours=1), timedelta(days=1)
Span = tuple[datetime, datetime]
SUBUSER_USAGE: tuple[Any, Any] = (SubuserUsageMinute, SubuserUsageRollup)
SUBUSER_ERRORS: tuple[Any, Any] = (SubuserUsageError, SubuserUsageErrorRollup)


def floor(t: datetime, step: timedelta) -> datetime:
    if step == DAY:
        return t.replace(hour=0, minute=0, second=0, microsecond=0)
    if step == HOUR:
        return t.replace(minute=0, second=0, microsecond=0)
    return t.replace(second=0, microsecond=0)


def _ceil(t: datetime, step: timedelta) -> datetime:
    f = floor(t, step)
    return f if f == t else f + step


@dataclass
class Plan:
    minutes: list[Span] = field(default_factory=list)
    hours: list[Span] = field(default_factory=list)
    days: list[Span] = field(default_factory=list)


def plan(start: datetime, end: datetime, largest: timedelta = DAY) -> Plan:
    """Split the minutes of [start, end) (start on a minute; a minute counts when it starts before
    end) into whole days (unless `largest` is HOUR), whole hours and the minutes left over."""
    end = _ceil(end, MINUTE)  # minute < end  <=>  minute < end rounded up to the minute
    out = Plan()
    h0, h1 = _ceil(start, HOUR), floor(end, HOUR)
    if h0 >= h1:
        out.minutes.append((start, end))
        return out
    d0, d1 = _ceil(start, DAY), floor(end, DAY)
    if d0 < d1 and largest == DAY:
        out.days.append((d0, d1))
        inner = [(h0, d0), (d1, h1)]
    else:
        inner = [(h0, h1)]
    out.hours.extend((a, b) for a, b in inner if a < b)
    out.minutes.extend((a, b) for a, b in ((start, h0), (h1, end)) if a < b)
    return out


def _between(col: Any, spans: list[Span]) -> Any:
    return or_(*(and_(col >= a, col < b) for a, b in spans))


def _rollup_cond(model: Any, p: Plan) -> Any:
    parts = []
    if p.hours:
        parts.append(and_(model.span == "h", _between(model.bucket, p.hours)))
    if p.days:
        parts.append(and_(model.span == "d", _between(model.bucket, p.days)))
    return or_(*parts)


def _owner(subuser: int | None, service_id: uuid.UUID) -> tuple[str, Any]:
    """(owner column, value): the service's rows, or one of its sub-users' (internal id)."""
    return ("service_id", service_id) if subuser is None else ("subuser_pk", subuser)


def usage_rows(
    service_id: uuid.UUID,
    start: datetime,
    end: datetime,
    columns: tuple[str, ...],
    *,
    at: bool = False,
    largest: timedelta = DAY,
    subuser: int | None = None,
) -> Any:
    """A subquery of rows (`columns` of usage_minutes, e.g. host and the counters) whose sums over
    any grouping equal those of the window's minute rows; with `at`, also each row's minute or bucket
    start as column `at` (buckets no longer than `largest`). With `subuser` (a sub-user's internal id):
    the same over that sub-user's minutes and rollups (subuser_usage_minutes / subuser_usage_rollups)."""
    minute_model, rollup_model = (UsageMinute, UsageRollup) if subuser is None else SUBUSER_USAGE
    owner, value = _owner(subuser, service_id)
    p = plan(start, end, largest)
    parts = []
    if p.minutes:
        m = minute_model
        cols = [getattr(m, c) for c in columns] + ([m.minute.label("at")] if at else [])
        parts.append(select(*cols).where(getattr(m, owner) == value, _between(m.minute, p.minutes)))
    if p.hours or p.days:
        r = rollup_model
        cols = [getattr(r, c) for c in columns] + ([r.bucket.label("at")] if at else [])
        parts.append(select(*cols).where(getattr(r, owner) == value, _rollup_cond(r, p)))
    return (parts[0] if len(parts) == 1 else union_all(*parts)).subquery("usage")


def error_rows(service_id: uuid.UUID, start: datetime, end: datetime, subuser: int | None = None) -> Any:
    """A subquery of (category, count) rows whose sums per category equal the window's usage_errors
    (with `subuser`: that sub-user's subuser_usage_errors, via subuser_usage_error_rollups)."""
    error_model, rollup_model = (UsageError, UsageErrorRollup) if subuser is None else SUBUSER_ERRORS
    owner, value = _owner(subuser, service_id)
    p = plan(start, end)
    parts = []
    if p.minutes:
        e = error_model
        parts.append(
            select(e.category, e.count).where(getattr(e, owner) == value, _between(e.minute, p.minutes))
        )
    if p.hours or p.days:
        r = rollup_model
        parts.append(select(r.category, r.count).where(getattr(r, owner) == value, _rollup_cond(r, p)))
    return (parts[0] if len(parts) == 1 else union_all(*parts)).subquery("errors")
