"""Hourly/daily rollup rows of metered minute rows, for services (usage_rollups, keyed by service_id) and
sub-users (subuser_usage_rollups, keyed by subuser_pk) alike: the writers add these to the rollup tables
with the same additive upsert and in the same transaction as the minutes."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from proxyplane.storage.models.usage_rollups import SPANS


def bucket(minute: datetime, span: str) -> datetime:
    """UTC start of the hour ("h") or day ("d") holding a minute."""
    if span == "h":
        return minute.replace(minute=0, second=0, microsecond=0)
    return minute.replace(hour=0, minute=0, second=0, microsecond=0)


def rollup_values(
    values: list[dict[str, Any]], key: str, counters: tuple[str, ...], owner: str = "service_id"
) -> list[dict[str, Any]]:
    """Minute rows (minute or error values) summed per (`owner`, span, bucket, `key`): one row per key,
    so a batch never touches a rollup row twice."""
    out: dict[tuple[Any, ...], dict[str, Any]] = {}
    for row in values:
        for span in SPANS:
            b = bucket(row["minute"], span)
            r = out.setdefault(
                (row[owner], span, b, row[key]),
                {owner: row[owner], "span": span, "bucket": b, key: row[key]} | dict.fromkeys(counters, 0),
            )
            for c in counters:
                r[c] += row[c]
    return list(out.values())
