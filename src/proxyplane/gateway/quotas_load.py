"""Reading service quotas (issue 32) from the store for the access table: the columns store_load.py joins
to its services select (no statement of its own), turned into a QuotaEntry. A quota of a period that ended
(a "month" quota whose reset the usage flush has not run yet) loads as the new period's: nothing used."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from proxyplane.storage.models.quotas import ServiceQuota

from .quotas import QuotaEntry

_q = ServiceQuota
QUOTA_COLUMNS = (
    _q.period,
    _q.quota_bytes,
    _q.extra_bytes,
    _q.quota_requests,
    _q.used_bytes,
    _q.used_requests,
    _q.limit_reached,
    _q.resets_at,
)


def quota_entry(service_id: str, row: Sequence[Any], now: datetime) -> QuotaEntry:
    """The entry of one row of QUOTA_COLUMNS (its period not None: the service has a quota row)."""
    period, qb, extra, qr, used_b, used_r, reached, resets_at = row
    if period == "month" and resets_at is not None and resets_at <= now:
        used_b = used_r = extra = 0
        reached = False
    return QuotaEntry(
        service_id,
        None if qb is None else int(qb) + int(extra or 0),
        None if qr is None else int(qr),
        int(used_b or 0),
        int(used_r or 0),
        bool(reached),
        payg=period == "payg",
    )
