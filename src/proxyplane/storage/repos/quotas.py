"""The one writer of `service_quotas` (issue 32): rows made with a metered service, the usage flush's
counters and threshold crossings, period resets, bought traffic and the auto top-up settings.

Statements are portable (no dialect branch): the flush's counters are one UPDATE with CASE per BATCH
services, each threshold one UPDATE ... RETURNING of the rows that crossed it (re-checked on the latest row
version under concurrent flushes on PostgreSQL, run by the single writer on SQLite: each crossing is
returned once)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import case, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.storage.models import Service
from proxyplane.storage.models.quotas import PAYG, ServiceQuota
from proxyplane.storage.models.wallet import Wallet
from proxyplane.storage.rowcount import rowcount

BATCH = 400  # services per counter UPDATE (bound parameters)
Q = ServiceQuota.__table__.c
NO_SYNC = {"synchronize_session": False}


def byte_limit() -> Any:
    """SQL: the byte limit of the current period (None when bytes are not metered)."""
    return Q.quota_bytes + Q.extra_bytes


def level_expr() -> Any:
    """SQL: 100 when a quota is used up, 80 from 80 % of one, else 0 (as sub-users' level_expr)."""

    def over(used: Any, limit: Any, num: int, den: int) -> Any:
        return limit.is_not(None) & (used * den >= limit * num)

    limit = byte_limit()
    full = over(Q.used_bytes, limit, 1, 1) | over(Q.used_requests, Q.quota_requests, 1, 1)
    most = over(Q.used_bytes, limit, 4, 5) | over(Q.used_requests, Q.quota_requests, 4, 5)
    return case((full, 100), (most, 80), else_=0)


async def create(
    session: AsyncSession,
    service_id: uuid.UUID,
    *,
    period: str,
    quota_bytes: int | None,
    quota_requests: int | None,
    gb_price_cents: int,
    period_start: datetime | None,
    resets_at: datetime | None,
    payg_unit_bytes: int | None = None,
) -> ServiceQuota:
    row = ServiceQuota(
        payg_unit_bytes=payg_unit_bytes,
        billed_units=0,
        service_id=service_id,
        period=period,
        quota_bytes=quota_bytes,
        quota_requests=quota_requests,
        extra_bytes=0,
        gb_price_cents=gb_price_cents,
        used_bytes=0,
        used_requests=0,
        limit_reached=False,
        notified_pct=0,
        period_start=period_start,
        resets_at=resets_at,
        auto_threshold_pct=None,
        auto_gb=0,
        auto_max=0,
        auto_count=0,
    )
    session.add(row)
    await session.flush()
    return row


async def locked(session: AsyncSession, service_id: uuid.UUID) -> ServiceQuota | None:
    """The service's row, locked for the rest of the transaction (PostgreSQL; SQLite has one writer)."""
    query = select(ServiceQuota).where(ServiceQuota.service_id == service_id).with_for_update()
    return (await session.execute(query)).scalar_one_or_none()


def _relevel(row: ServiceQuota) -> None:
    """limit_reached / notified_pct of a row whose limit moved (bought traffic, a reset)."""
    full = most = False
    if row.quota_bytes is not None:
        limit = row.quota_bytes + row.extra_bytes
        full, most = row.used_bytes >= limit, row.used_bytes * 5 >= limit * 4
    if row.quota_requests is not None:
        full = full or row.used_requests >= row.quota_requests
        most = most or row.used_requests * 5 >= row.quota_requests * 4
    row.limit_reached = full
    row.notified_pct = 100 if full else 80 if most else 0


async def add_extra(session: AsyncSession, row: ServiceQuota, nbytes: int, *, auto: bool = False) -> None:
    """Add bought traffic to the current period of a (locked) row; the service serves again when the new
    limit is above its use (a change every node sees: extra_bytes and limit_reached are watched)."""
    row.extra_bytes += nbytes
    if auto:
        row.auto_count += 1
    _relevel(row)
    await session.flush()


async def set_auto(
    session: AsyncSession, row: ServiceQuota, threshold_pct: int | None, gb: int, max_times: int
) -> None:
    row.auto_threshold_pct, row.auto_gb, row.auto_max = threshold_pct, gb, max_times
    await session.flush()


async def set_plan(
    session: AsyncSession,
    row: ServiceQuota,
    *,
    quota_bytes: int | None,
    quota_requests: int | None,
    period: str,
    gb_price_cents: int,
    bounds: tuple[datetime | None, datetime | None] | None = None,
) -> None:
    """The operator's change of a service's quota, period or per-GB rate (the caller validated it);
    `bounds` (period_start, resets_at) when the period's kind changed."""
    row.quota_bytes, row.quota_requests, row.period, row.gb_price_cents = (
        quota_bytes,
        quota_requests,
        period,
        gb_price_cents,
    )
    if bounds is not None:
        row.period_start, row.resets_at = bounds
    _relevel(row)
    await session.flush()


def _reset_values(start: datetime, resets_at: datetime | None) -> dict[str, Any]:
    return {
        "used_bytes": 0,
        "used_requests": 0,
        "extra_bytes": 0,
        "limit_reached": False,
        "notified_pct": 0,
        "auto_count": 0,
        "period_start": start,
        "resets_at": resets_at,
    }


async def reset_term(session: AsyncSession, service_id: uuid.UUID, start: datetime) -> int:
    """A paid renewal starts a new period of a "term" quota: used, bought traffic and top-ups back to 0."""
    result = await session.execute(
        update(ServiceQuota)
        .where(Q.service_id == service_id, Q.period == "term")
        .values(**_reset_values(start, None)),
        execution_options=NO_SYNC,
    )
    return rowcount(result)


async def reset_months(session: AsyncSession, now: datetime, start: datetime, next_start: datetime) -> int:
    """Every "month" quota whose period ended by ``now`` starts the month beginning at ``start``."""
    result = await session.execute(
        update(ServiceQuota)
        .where(Q.period == "month", Q.resets_at <= now)
        .values(**_reset_values(start, next_start)),
        execution_options=NO_SYNC,
    )
    return rowcount(result)


async def add_counters(session: AsyncSession, items: Sequence[tuple[uuid.UUID, int, int]]) -> None:
    """used_bytes += b, used_requests += r of (service id, b, r); services without a row are skipped."""
    for i in range(0, len(items), BATCH):
        chunk = items[i : i + BATCH]
        ids = [sid for sid, _b, _r in chunk]
        byte_case = case({sid: b for sid, b, _r in chunk}, value=Q.service_id, else_=0)
        req_case = case({sid: r for sid, _b, r in chunk}, value=Q.service_id, else_=0)
        await session.execute(
            update(ServiceQuota)
            .where(Q.service_id.in_(ids))
            .values(used_bytes=Q.used_bytes + byte_case, used_requests=Q.used_requests + req_case),
            execution_options=NO_SYNC,
        )


async def crossings(session: AsyncSession, ids: Sequence[uuid.UUID], pct: int) -> list[Any]:
    """Raise notified_pct to ``pct`` on the rows of ``ids`` whose level reached it (and set limit_reached
    at 100 %); the rows that moved."""
    values: dict[str, Any] = {"notified_pct": pct}
    if pct == 100:
        values["limit_reached"] = True
    out: list[Any] = []
    for i in range(0, len(ids), BATCH):
        stmt = (
            update(ServiceQuota)
            .where(
                Q.service_id.in_(list(ids[i : i + BATCH])),
                Q.period != PAYG,  # pay as you go: its limit is the wallet's (payg_limit), no usage events
                level_expr() >= pct,
                Q.notified_pct < pct,
            )
            .values(**values)
            .returning(
                Q.service_id,
                Q.notified_pct,
                Q.used_bytes,
                Q.used_requests,
                Q.quota_bytes,
                Q.extra_bytes,
                Q.quota_requests,
                Q.period,
            )
        )
        out.extend((await session.execute(stmt, execution_options=NO_SYNC)).all())
    return out


async def auto_due(session: AsyncSession, ids: Sequence[uuid.UUID]) -> list[uuid.UUID]:
    """The services of ``ids`` whose auto top-up is due: on, a byte quota, the threshold reached, fewer
    top-ups this period than the customer's maximum."""
    limit = byte_limit()
    out: list[uuid.UUID] = []
    for i in range(0, len(ids), BATCH):
        query = select(Q.service_id).where(
            Q.service_id.in_(list(ids[i : i + BATCH])),
            Q.auto_threshold_pct.is_not(None),
            Q.quota_bytes.is_not(None),
            Q.auto_gb > 0,
            Q.auto_count < Q.auto_max,
            Q.used_bytes * 100 >= limit * Q.auto_threshold_pct,
        )
        out.extend((await session.execute(query)).scalars())
    return out


# pay as you go (issue 32.4, domains/quotas/payg.py)


async def payg_billed(session: AsyncSession, row: ServiceQuota, units: int, hour: datetime) -> None:
    """``units`` more were charged (a locked row) in the ledger entry of ``hour``."""
    row.billed_units += units
    row.billed_hour = hour
    await session.flush()


async def payg_limit(session: AsyncSession, row: ServiceQuota, limit: int) -> None:
    """The byte limit the wallet covers (a locked row); refused when its use reached it. Written only when
    it moved (extra_bytes and limit_reached are watched: every node reloads the service)."""
    reached = row.used_bytes >= limit
    if row.extra_bytes != limit or row.limit_reached != reached or row.quota_bytes != 0:
        row.quota_bytes, row.extra_bytes, row.limit_reached = 0, limit, reached
        row.notified_pct = 100 if reached else 0
        await session.flush()


async def payg_rows_of(session: AsyncSession, customer_id: int) -> list[ServiceQuota]:
    """The customer's pay-as-you-go rows (what they owe together)."""
    query = (
        select(ServiceQuota)
        .join(Service, Service.service_id == ServiceQuota.service_id)
        .where(Service.customer_id == customer_id, Q.period == PAYG)
    )
    return list((await session.execute(query)).scalars())


async def payg_among(session: AsyncSession, ids: Sequence[uuid.UUID]) -> list[uuid.UUID]:
    out: list[uuid.UUID] = []
    for i in range(0, len(ids), BATCH):
        query = select(Q.service_id).where(Q.service_id.in_(list(ids[i : i + BATCH])), Q.period == PAYG)
        out.extend((await session.execute(query)).scalars())
    return out


async def payg_due(session: AsyncSession, hour: datetime, limit: int) -> list[uuid.UUID]:
    """Pay-as-you-go rows with use past the units billed whose last entry is from an earlier hour, and
    refused ones whose customer's balance now covers their owed units and one more (a top-up)."""
    billed_to = Q.billed_units * Q.payg_unit_bytes
    started = (Q.used_bytes + Q.payg_unit_bytes - 1) // Q.payg_unit_bytes  # integer division, both engines
    covered = Wallet.balance_cents >= Q.gb_price_cents * (started - Q.billed_units + 1)
    query = (
        select(Q.service_id)
        .join(Service, Service.service_id == Q.service_id)
        .join(Wallet, Wallet.customer_id == Service.customer_id, isouter=True)
        .where(
            Q.period == PAYG,
            (Q.limit_reached.is_(True) & covered)
            | ((Q.used_bytes > billed_to) & (Q.billed_hour.is_(None) | (Q.billed_hour < hour))),
        )
        .order_by(Q.service_id)
        .limit(limit)
    )
    return list((await session.execute(query)).scalars())
