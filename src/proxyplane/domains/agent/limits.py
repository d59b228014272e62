"""The account's limits (issue 21.5, registered in issue 20): the balance against the customer's
balance-low threshold, the calling key's spend caps, each active rotating bandwidth service's quota in its
current period, and a `warnings` list naming each one near its end (balance below the threshold, a spend
cap or a bandwidth quota more than 80 % used). Served as `GET /customer/limits`, the MCP tool
`get_account_limits` and the MCP resource `proxyplane://account/limits` (adapters/mcp/limits.py)."""

from __future__ import annotations

import uuid
from datetime import datetime

from pydantic import BaseModel, Field
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.domains.apikeys import caps
from proxyplane.domains.events.service import balance_threshold
from proxyplane.domains.quotas import service as quotas
from proxyplane.domains.wallet.service import balance
from proxyplane.ops import Context, Operation, register
from proxyplane.storage.models.services import Service

NEAR = 0.8  # more than 80 % used is "near its end"


class SpendCap(BaseModel):
    cap: str = Field(description="daily or total")
    limit_cents: int
    spent_cents: int
    near: bool = Field(description="more than 80 % of the cap is used")


class BandwidthQuota(BaseModel):
    service_id: uuid.UUID
    quota_bytes: int = Field(description="the period's limit: the plan's quota plus traffic bought")
    used_bytes: int = Field(description="bytes up and down since the start of the current period")
    left_bytes: int = 0
    period: str = Field(default="term", description="term, month or none (issue 32)")
    resets_at: datetime | None = Field(default=None, description="when the use resets; null: never")
    near: bool = Field(description="more than 80 % of the quota is used")


class AccountLimits(BaseModel):
    balance_cents: int
    balance_low_threshold_cents: int | None
    spend_caps: list[SpendCap] = Field(description="this key's caps (none when it has none)")
    bandwidth_quotas: list[BandwidthQuota] = Field(description="active rotating bandwidth services")
    warnings: list[str] = Field(description="one line for each limit near its end; empty when none is")


def _cap(name: str, limit: int | None, spent: int) -> SpendCap | None:
    if limit is None:
        return None
    return SpendCap(cap=name, limit_cents=limit, spent_cents=spent, near=spent > NEAR * limit)


async def bandwidth_quotas(session: AsyncSession, customer_id: int) -> list[BandwidthQuota]:
    """The traffic quotas of the customer's active services in their current periods (service_quotas,
    issue 32: what the gateway enforces, bought traffic included)."""
    services = list(
        (
            await session.execute(
                select(Service).where(Service.customer_id == customer_id, Service.status == "active")
            )
        ).scalars()
    )
    found = await quotas.usages(session, services)
    out = []
    for svc in services:
        u = found.get(svc.service_id)
        if u is None or u.limit_bytes is None:
            continue
        out.append(
            BandwidthQuota(
                service_id=u.service_id,
                quota_bytes=u.limit_bytes,
                used_bytes=u.used_bytes,
                left_bytes=u.left_bytes or 0,
                period=u.period,
                resets_at=u.resets_at,
                near=u.used_bytes > NEAR * u.limit_bytes,
            )
        )
    return out


async def account_limits(session: AsyncSession, customer_id: int, key_id: uuid.UUID | None) -> AccountLimits:
    cents = await balance(session, customer_id)
    threshold = await balance_threshold(session, customer_id)
    cap = (await caps.caps_of(session, [key_id])).get(key_id, caps.NO_CAPS) if key_id else caps.NO_CAPS
    metered = await bandwidth_quotas(session, customer_id)
    spend_caps = [
        c
        for c in (
            _cap("daily", cap.daily_limit_cents, cap.spent_today_cents),
            _cap("total", cap.total_limit_cents, cap.spent_total_cents),
        )
        if c is not None
    ]
    warnings = []
    if threshold is not None and cents < threshold:
        warnings.append(f"balance {cents} cents is below the balance-low threshold of {threshold} cents")
    warnings += [
        f"this key's {c.cap} spend cap is {c.spent_cents} of {c.limit_cents} cents used"
        for c in spend_caps
        if c.near
    ]
    warnings += [
        f"service {q.service_id} used {q.used_bytes} of {q.quota_bytes} bytes this period "
        f"({q.left_bytes} left{'' if q.resets_at is None else ', resets ' + q.resets_at.isoformat()}); "
        "buy more with add_traffic"
        for q in metered
        if q.near
    ]
    return AccountLimits(
        balance_cents=cents,
        balance_low_threshold_cents=threshold,
        spend_caps=spend_caps,
        bandwidth_quotas=metered,
        warnings=warnings,
    )


async def get_account_limits(ctx: Context, _: None) -> AccountLimits:
    return await account_limits(ctx.session, ctx.customer_id, ctx.caller.key_id)


ACCOUNT_LIMITS = Operation(
    name="get_account_limits",
    summary="Your limits and how near each is to its end: the balance against your balance-low threshold, "
    "this key's spend caps, rotating bandwidth quotas, and warnings (balance below the threshold, more than "
    "80 % of a cap or quota used).",
    method="GET",
    path="/customer/limits",
    handler=get_account_limits,
    output=AccountLimits,
    tags=("profile",),
)

register(ACCOUNT_LIMITS)
