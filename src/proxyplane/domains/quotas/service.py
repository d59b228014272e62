"""Service quotas (issue 32): what a plan meters, its periods, the current period's use, buying traffic.

A service's plan meters traffic when its parameters (the catalog product's config, copied at purchase)
carry ``quota_bytes`` and/or ``quota_requests``; ``quota_period`` is "term" (default: reset when a renewal
is paid), "month" (calendar month, UTC) or "none" (a package that never expires); ``gb_price_cents`` is
the per-GB rate of add_traffic. The row (storage/models/quotas.py) is made with the service; the gateway
enforces it (gateway/subusers.py: the sub-user traffic-limit machinery, keyed by the service id).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.core.clock import utcnow
from proxyplane.core.errors import Conflict, PriceChanged, ValidationFailed
from proxyplane.domains.invoices import service as invoices
from proxyplane.domains.quotas import payg
from proxyplane.domains.wallet import service as wallet
from proxyplane.storage.models import Service
from proxyplane.storage.models.quotas import PAYG, PERIODS, ServiceQuota
from proxyplane.storage.repos import quotas as repo

GB = 1_000_000_000  # decimal, as traffic is sold
MAX_GB = 100_000  # one purchase


def _positive(value: Any) -> int | None:
    return int(value) if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


@dataclass(frozen=True)
class Plan:
    quota_bytes: int | None
    quota_requests: int | None
    period: str
    gb_price_cents: int
    unit_bytes: int | None = None  # pay as you go: the unit billed per started unit (payg.py)


def plan_of(parameters: dict[str, Any] | None) -> Plan | None:
    """The metered plan of a service's (or a product's config) parameters; None when nothing is metered.
    A "requests" plan meters requests only, a "bandwidth" plan bytes only (as the dashboard reads them)."""
    params = parameters or {}
    if params.get("plan") == PAYG:  # billed per started unit from the wallet (payg.py)
        unit = params.get("payg_unit_bytes", payg.GB)
        unit = unit if isinstance(unit, int) and payg.MIN_UNIT <= unit <= payg.MAX_UNIT else payg.GB
        return Plan(0, None, PAYG, _positive(params.get("gb_price_cents")) or 0, unit)
    qb, qr = _positive(params.get("quota_bytes")), _positive(params.get("quota_requests"))
    if params.get("plan") == "requests":
        qb = None
    elif params.get("plan") == "bandwidth":
        qr = None
    if qb is None and qr is None:
        return None
    period = params.get("quota_period", "term")
    return Plan(qb, qr, period if period in PERIODS else "term", _positive(params.get("gb_price_cents")) or 0)


def validate_config(config: dict[str, Any], prefix: str = "config.") -> None:
    """An operator's product config: quota fields positive integers, a known period, a rate >= 0 (422
    naming `prefix` + the field: "" where the fields are the input's own, as operator_service_quota_set's)."""
    for name in ("quota_bytes", "quota_requests"):
        if name in config and _positive(config[name]) is None:
            raise ValidationFailed(f"{name} must be a positive integer", field=f"{prefix}{name}")
    if "quota_period" in config and config["quota_period"] not in PERIODS:
        raise ValidationFailed(
            f"quota_period must be one of {', '.join(PERIODS)}", field=f"{prefix}quota_period"
        )
    if config.get("plan") == PAYG:
        payg.unit_of(config)
    price = config.get("gb_price_cents", 0)
    if not isinstance(price, int) or isinstance(price, bool) or price < 0:
        raise ValidationFailed("gb_price_cents must be an integer >= 0", field=f"{prefix}gb_price_cents")


def month_bounds(now: datetime) -> tuple[datetime, datetime]:
    """(start of ``now``'s calendar month, start of the next one), UTC."""
    start = now.astimezone(UTC).replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    nxt = (
        start.replace(year=start.year + 1, month=1)
        if start.month == 12
        else start.replace(month=start.month + 1)
    )
    return start, nxt


async def ensure_row(session: AsyncSession, svc: Service, now: datetime | None = None) -> ServiceQuota | None:
    """The service's quota row, made when its plan meters traffic and it has none yet."""
    plan = plan_of(svc.parameters)
    if plan is None:
        return None
    row = await session.get(ServiceQuota, svc.service_id)
    if row is not None:
        return row
    now = now or utcnow()
    start: datetime | None = svc.current_period_start
    resets: datetime | None = None
    if plan.period == "month":
        start, resets = month_bounds(now)
    elif plan.period in ("none", PAYG):
        start = now
    row = await repo.create(
        session,
        svc.service_id,
        period=plan.period,
        quota_bytes=plan.quota_bytes,
        quota_requests=plan.quota_requests,
        gb_price_cents=plan.gb_price_cents,
        period_start=start,
        resets_at=resets,
        payg_unit_bytes=plan.unit_bytes,
    )
    if plan.period == PAYG:  # its first limit: what the wallet covers now
        await payg.settle(session, row, svc, now)
    return row


async def renewed(session: AsyncSession, service_id: uuid.UUID, now: datetime) -> None:
    """A renewal was paid: a "term" quota starts a new period now."""
    await repo.reset_term(session, service_id, now)


async def reset_due(session: AsyncSession, now: datetime | None = None) -> int:
    """Start the new month of every "month" quota whose period ended (the usage flush runs this)."""
    now = now or utcnow()
    start, nxt = month_bounds(now)
    return await repo.reset_months(session, now, start, nxt)


@dataclass(frozen=True)
class Usage:
    """A service's quota in its current period (None fields: not metered)."""

    service_id: uuid.UUID
    period: str
    period_start: datetime | None
    resets_at: datetime | None  # None: never ("none" period)
    quota_bytes: int | None  # the plan's quota of the period
    extra_bytes: int  # bought for this period
    limit_bytes: int | None  # quota_bytes + extra_bytes
    used_bytes: int
    left_bytes: int | None
    quota_requests: int | None
    used_requests: int
    left_requests: int | None
    exhausted: bool
    gb_price_cents: int
    auto_topup: dict[str, int] | None  # {"threshold_pct", "gb", "max_per_period", "done_this_period"}
    payg: dict[str, int] | None = None  # {"unit_bytes", "unit_cents", "billed_units", "owed_units"}


def usage_of(row: ServiceQuota, svc: Service, now: datetime | None = None) -> Usage:
    now = now or utcnow()
    used_b, used_r, extra = row.used_bytes, row.used_requests, row.extra_bytes
    start, resets = row.period_start or svc.current_period_start, row.resets_at
    if row.period == "term":
        resets = svc.current_period_end
    elif row.period == "month" and resets is not None and resets <= now:  # reset not run yet: a new month
        used_b = used_r = extra = 0
        start, resets = month_bounds(now)
    limit = None if row.quota_bytes is None else row.quota_bytes + extra
    left_b = None if limit is None else max(0, limit - used_b)
    left_r = None if row.quota_requests is None else max(0, row.quota_requests - used_r)
    auto = None
    if row.auto_threshold_pct is not None:
        auto = {
            "threshold_pct": row.auto_threshold_pct,
            "gb": row.auto_gb,
            "max_per_period": row.auto_max,
            "done_this_period": row.auto_count,
        }
    bill = None
    if row.period == PAYG:
        bill = {
            "unit_bytes": row.payg_unit_bytes or payg.GB,
            "unit_cents": row.gb_price_cents,
            "billed_units": row.billed_units,
            "owed_units": payg.owed(row),
        }
    return Usage(
        svc.service_id,
        row.period,
        start,
        None if row.period in ("none", PAYG) else resets,
        row.quota_bytes,
        extra,
        limit,
        used_b,
        left_b,
        row.quota_requests,
        used_r,
        left_r,
        left_b == 0 or left_r == 0,
        row.gb_price_cents,
        auto,
        bill,
    )


async def usage(session: AsyncSession, svc: Service) -> Usage | None:
    row = await session.get(ServiceQuota, svc.service_id, populate_existing=True)
    return None if row is None else usage_of(row, svc)


async def usages(session: AsyncSession, services: list[Service]) -> dict[uuid.UUID, Usage]:
    """Usage of several services in one read (the dashboard's lists, MCP's limits)."""
    by_id = {s.service_id: s for s in services}
    if not by_id:
        return {}
    rows = (await session.execute(select(ServiceQuota).where(ServiceQuota.service_id.in_(by_id)))).scalars()
    return {row.service_id: usage_of(row, by_id[row.service_id]) for row in rows}


def _gb(gb: Any, field: str = "gb") -> int:
    if not isinstance(gb, int) or isinstance(gb, bool) or gb <= 0:
        raise ValidationFailed(f"{field} must be a positive whole number of GB", field=field)
    if gb > MAX_GB:
        raise ValidationFailed(f"{field} must be at most {MAX_GB}", field=field)
    return gb


async def _metered_row(session: AsyncSession, svc: Service) -> ServiceQuota:
    row = await repo.locked(session, svc.service_id)
    if row is None or row.quota_bytes is None:
        raise Conflict(f"service {svc.service_id} has no traffic quota: traffic cannot be added to it")
    if row.period == PAYG:
        raise Conflict(f"service {svc.service_id} is pay as you go: it pays for the traffic it uses")
    return row


async def add_traffic(
    session: AsyncSession, svc: Service, gb: int, *, auto: bool = False, max_total_cents: int | None = None
) -> tuple[Usage, int]:
    """Buy ``gb`` GB for the service's current period at its per-GB rate, paid from the wallet
    (InsufficientBalance 402 leaves everything unchanged; above ``max_total_cents``: PriceChanged 409,
    nothing charged). Returns (usage after, cents charged)."""
    gb = _gb(gb)
    if svc.status not in ("active", "suspended"):
        raise Conflict(f"service {svc.service_id} is {svc.status}: traffic cannot be added")
    row = await _metered_row(session, svc)
    cents = gb * row.gb_price_cents
    if max_total_cents is not None and cents > max_total_cents:
        raise PriceChanged(
            f"{gb} GB cost {cents} cents, more than max_total_cents={max_total_cents}; nothing was charged",
            current_price_cents=cents,
            max_total_cents=max_total_cents,
        )
    how = "Auto top-up" if auto else "Traffic"
    description = f"{how}: {gb} GB for service #{svc.number}"
    entry = None
    if cents > 0:
        entry = await wallet.debit(
            session, svc.customer_id, cents, "traffic", description, service_id=svc.service_id
        )
    await invoices.record_charge(  # an invoice like every purchase (a free rate too: 0 cents, paid)
        session,
        svc.customer_id,
        kind="traffic",
        description=description,
        lines=[invoices.Line(f"Traffic GB, {_period_text(row.period)}", gb, row.gb_price_cents, cents)],
        service_id=svc.service_id,
        ledger_entries=[entry],
    )
    await repo.add_extra(session, row, gb * GB, auto=auto)
    return usage_of(row, svc), cents


def _period_text(period: str) -> str:
    return {"none": "never expires", "month": "this calendar month"}.get(period, "this billing term")


async def set_auto_topup(
    session: AsyncSession, svc: Service, enabled: bool, threshold_pct: int, gb: int, max_per_period: int
) -> Usage:
    row = await _metered_row(session, svc)
    if enabled:
        if not isinstance(threshold_pct, int) or not 1 <= threshold_pct <= 100:
            raise ValidationFailed("threshold_pct must be between 1 and 100", field="threshold_pct")
        _gb(gb)
        if not isinstance(max_per_period, int) or not 1 <= max_per_period <= 100:
            raise ValidationFailed("max_per_period must be between 1 and 100", field="max_per_period")
        await repo.set_auto(session, row, threshold_pct, gb, max_per_period)
    else:
        await repo.set_auto(session, row, None, 0, 0)
    return usage_of(row, svc)


def _bounds(period: str, row: ServiceQuota, svc: Service) -> tuple[datetime | None, datetime | None]:
    """(period_start, resets_at) of a quota whose period kind the operator changed; its use so far stays:
    a month runs from this calendar month's start to the next's, a term is the service's billing term,
    "none" keeps its start and never resets."""
    if period == "month":
        return month_bounds(utcnow())
    if period == "term":
        return svc.current_period_start, None
    return row.period_start, None


async def set_plan(
    session: AsyncSession,
    svc: Service,
    *,
    quota_bytes: int | None,
    quota_requests: int | None,
    period: str | None,
    gb_price_cents: int | None,
) -> Usage:
    """The operator's change of one service's quota, period or per-GB rate (None: unchanged). A quota
    below the period's use is refused (422 naming the field): raise it, or add traffic instead."""
    row = await repo.locked(session, svc.service_id)
    if row is None:
        raise Conflict(f"service {svc.service_id} has no quota")
    if row.period == PAYG and (quota_bytes, quota_requests, period) != (None, None, None):
        raise Conflict(f"service {svc.service_id} is pay as you go, only its gb_price_cents is settable")
    given = {"quota_bytes": quota_bytes, "quota_requests": quota_requests, "quota_period": period}
    validate_config(
        {k: v for k, v in {**given, "gb_price_cents": gb_price_cents}.items() if v is not None}, prefix=""
    )
    if quota_bytes is not None and quota_bytes + row.extra_bytes < row.used_bytes:
        raise ValidationFailed(
            f"quota_bytes {quota_bytes} is below this period's use ({row.used_bytes} bytes)",
            field="quota_bytes",
        )
    if quota_requests is not None and quota_requests < row.used_requests:
        raise ValidationFailed(
            f"quota_requests {quota_requests} is below this period's use ({row.used_requests})",
            field="quota_requests",
        )
    await repo.set_plan(
        session,
        row,
        quota_bytes=row.quota_bytes if quota_bytes is None else quota_bytes,
        quota_requests=row.quota_requests if quota_requests is None else quota_requests,
        period=row.period if period is None else period,
        gb_price_cents=row.gb_price_cents if gb_price_cents is None else gb_price_cents,
        bounds=None if period in (None, row.period) else _bounds(period, row, svc),
    )
    return usage_of(row, svc)
