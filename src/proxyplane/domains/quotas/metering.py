"""Metering of service quotas (issue 32), called by the gateway's usage sink inside its flush transaction,
right after the services' minute rows (gateway/usage_sink.py): the same steps as the sub-users'
(domains/subusers/metering.py), over service_quotas, in a number of statements that does not grow with
the number of services (per BATCH):

1. "month" quotas whose period ended start the new month (one UPDATE, usually of no row);
2. `used_bytes += up + down`, `used_requests += requests` of the flushed services that have a row;
3. the due auto top-ups (threshold reached, fewer than the customer's maximum this period): each buys its
   GB from the wallet (domains/quotas/service.add_traffic); a wallet that cannot pay skips it (never a
   negative balance) and the service is refused at its limit as without top-up;
4. the pay-as-you-go services among them are billed and re-limited (domains/quotas/payg.settle: one
   ledger entry a service an hour at most, never a negative balance, refused when the wallet cannot pay);
5. per threshold (80, then 100), one UPDATE ... RETURNING of the rows whose level reached it while
   notified_pct is below: notified_pct (and limit_reached at 100) set, `service.quota_80` /
   `service.quota_100` events (webhook deliveries) per customer.

A counter-only UPDATE logs no gateway change (migration 0030); setting limit_reached (or bought traffic)
does, so every node refuses (or serves again) within its change poll/NOTIFY interval.
"""

from __future__ import annotations

import logging
import uuid
from collections import defaultdict
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.core.clock import utcnow
from proxyplane.core.errors import DomainError
from proxyplane.domains.events.service import emit_many
from proxyplane.domains.quotas import payg
from proxyplane.domains.quotas.service import add_traffic, reset_due
from proxyplane.storage.models import Service
from proxyplane.storage.repos import quotas as repo

log = logging.getLogger(__name__)
EVENTS = {80: "service.quota_80", 100: "service.quota_100"}


def totals(minutes: list[dict[str, Any]]) -> dict[uuid.UUID, tuple[int, int]]:
    """Per service: (bytes up + down, requests) of a flush's usage_minutes rows."""
    out: dict[uuid.UUID, list[int]] = defaultdict(lambda: [0, 0])
    for row in minutes:
        t = out[row["service_id"]]
        t[0] += int(row["bytes_up"]) + int(row["bytes_down"])
        t[1] += int(row["requests"])
    return {sid: (b, r) for sid, (b, r) in out.items() if b or r}


def event_data(row: Any) -> dict[str, Any]:
    limit = None if row.quota_bytes is None else row.quota_bytes + row.extra_bytes
    return {
        "service_id": str(row.service_id),
        "threshold_pct": row.notified_pct,
        "period": row.period,
        "used_bytes": row.used_bytes,
        "limit_bytes": limit,
        "used_requests": row.used_requests,
        "quota_requests": row.quota_requests,
    }


async def _auto_topups(session: AsyncSession, ids: list[uuid.UUID]) -> None:
    due = await repo.auto_due(session, ids)
    if not due:
        return
    services = (await session.execute(select(Service).where(Service.service_id.in_(due)))).scalars()
    for svc in services:
        row = await repo.locked(session, svc.service_id)
        if row is None or row.auto_threshold_pct is None:
            continue
        try:
            await add_traffic(session, svc, row.auto_gb, auto=True)
        except DomainError as exc:  # insufficient balance (nothing taken), a service no longer live
            log.info("auto top-up of service %s skipped: %s", svc.service_id, exc)


async def _notify(session: AsyncSession, crossed: list[Any]) -> None:
    owners = dict(
        (
            await session.execute(
                select(Service.service_id, Service.customer_id).where(
                    Service.service_id.in_({row.service_id for row in crossed})
                )
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


async def apply_usage(session: AsyncSession, minutes: list[dict[str, Any]], now: Any = None) -> None:
    """Add a flush's service minute rows (usage_minutes values: "service_id", "bytes_up", "bytes_down",
    "requests", ...) to the services' quotas (see the module doc), in the caller's transaction."""
    now = now or utcnow()
    await reset_due(session, now)
    items = sorted(((sid, b, r) for sid, (b, r) in totals(minutes).items()), key=lambda t: str(t[0]))
    if not items:
        return
    await repo.add_counters(session, items)
    ids = [sid for sid, _b, _r in items]
    await _auto_topups(session, ids)
    await payg.settle_ids(session, ids, now)
    # 80 then 100: a flush that jumps past 80 % straight to the limit sends both, in order
    crossed = [*await repo.crossings(session, ids, 80), *await repo.crossings(session, ids, 100)]
    if crossed:
        await _notify(session, crossed)
