"""Operations (issue 32): a service's quota in its current period, buying traffic, the auto top-up."""

from __future__ import annotations

import uuid
from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from proxyplane.core.bounds import CENTS_MAX
from proxyplane.core.errors import Conflict, NotFound
from proxyplane.core.scopes import Scope
from proxyplane.domains.quotas import service as quotas
from proxyplane.domains.services import service as services
from proxyplane.domains.wallet import service as wallet
from proxyplane.ops import Context, Effect, Operation, register
from proxyplane.storage.models import Service

TAGS = ("traffic",)


class ServiceRef(BaseModel):
    service_id: uuid.UUID


class AutoTopupOut(BaseModel):
    threshold_pct: int = Field(description="buys when this % of the period's limit is used")
    gb: int = Field(description="GB bought each time")
    max_per_period: int
    done_this_period: int


class PaygOut(BaseModel):
    unit_bytes: int = Field(description="the unit billed: each started unit is charged once")
    unit_cents: int = Field(description="the price of one unit")
    billed_units: int = Field(description="units charged so far (ledger kind payg, an entry an hour at most)")
    owed_units: int = Field(description="units started, charged with the next hour's entry")


class QuotaOut(BaseModel):
    service_id: uuid.UUID
    period: str = Field(
        description="term (reset on renewal), month (calendar month, UTC), none (never) or payg (pay as you "
        "go: the limit is what the wallet covers)"
    )
    period_start: datetime | None
    resets_at: datetime | None = Field(description="when the period ends and the use resets; null: never")
    quota_bytes: int | None = Field(description="the plan's traffic per period; null: traffic not metered")
    extra_bytes: int = Field(description="traffic bought for this period (add_traffic, auto top-up)")
    limit_bytes: int | None = Field(description="quota_bytes + extra_bytes")
    used_bytes: int
    left_bytes: int | None
    quota_requests: int | None = Field(description="the plan's requests per period; null: not metered")
    used_requests: int
    left_requests: int | None
    exhausted: bool = Field(
        description="true: the gateway refuses the service (quota_exhausted; pay as you go: "
        "insufficient_balance)"
    )
    gb_price_cents: int = Field(description="the price of 1 GB (10^9 bytes) of add_traffic")
    auto_topup: AutoTopupOut | None = Field(description="null: off")
    payg: PaygOut | None = Field(default=None, description="pay as you go: its billing; null: not")


def quota_out(u: quotas.Usage) -> QuotaOut:
    auto = None if u.auto_topup is None else AutoTopupOut(**u.auto_topup)
    return QuotaOut(
        service_id=u.service_id,
        period=u.period,
        period_start=u.period_start,
        resets_at=u.resets_at,
        quota_bytes=u.quota_bytes,
        extra_bytes=u.extra_bytes,
        limit_bytes=u.limit_bytes,
        used_bytes=u.used_bytes,
        left_bytes=u.left_bytes,
        quota_requests=u.quota_requests,
        used_requests=u.used_requests,
        left_requests=u.left_requests,
        exhausted=u.exhausted,
        gb_price_cents=u.gb_price_cents,
        auto_topup=auto,
        payg=None if u.payg is None else PaygOut(**u.payg),
    )


class AddTrafficIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    service_id: uuid.UUID
    gb: int = Field(ge=1, le=100_000, description="whole GB (10^9 bytes) to add to the current period")
    max_total_cents: int | None = Field(
        default=None,
        ge=0,
        le=CENTS_MAX,
        description="the most this call may charge, in cents; above it nothing is charged (409)",
    )
    idempotency_key: str = Field(min_length=1, max_length=200)


class AddTrafficOut(BaseModel):
    quota: QuotaOut
    charged_cents: int
    balance_cents: int


class AutoTopupIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    service_id: uuid.UUID
    enabled: bool = Field(strict=True)  # a JSON boolean only: 0 or "yes" is 422 (issue 30.6)
    threshold_pct: int = Field(default=90, ge=1, le=100, description="buy when this % of the limit is used")
    gb: int = Field(default=1, ge=1, le=100_000, description="whole GB bought each time")
    max_per_period: int = Field(default=1, ge=1, le=100, description="top-ups per period at most")


async def _usage(ctx: Context, svc: Service) -> quotas.Usage:
    found = await quotas.usage(ctx.session, svc)
    if found is None:
        raise NotFound(f"service {svc.service_id} has no traffic or request quota")
    return found


async def get_quota(ctx: Context, data: ServiceRef) -> QuotaOut:
    svc = await services.get_owned(ctx.session, ctx.customer_id, data.service_id)
    return quota_out(await _usage(ctx, svc))


async def add_traffic(ctx: Context, data: AddTrafficIn) -> AddTrafficOut:
    svc = await services.get_owned(ctx.session, ctx.customer_id, data.service_id)
    usage, cents = await quotas.add_traffic(ctx.session, svc, data.gb, max_total_cents=data.max_total_cents)
    return AddTrafficOut(
        quota=quota_out(usage),
        charged_cents=cents,
        balance_cents=await wallet.balance(ctx.session, ctx.customer_id),
    )


async def set_auto_topup(ctx: Context, data: AutoTopupIn) -> QuotaOut:
    svc = await services.get_owned(ctx.session, ctx.customer_id, data.service_id)
    usage = await quotas.set_auto_topup(
        ctx.session, svc, data.enabled, data.threshold_pct, data.gb, data.max_per_period
    )
    return quota_out(usage)


register(
    Operation(
        name="get_service_quota",
        summary="A metered service's quota this period: used, left, when it resets, traffic bought.",
        method="GET",
        path="/customer/services/{service_id}/quota",
        handler=get_quota,
        input=ServiceRef,
        output=QuotaOut,
        scopes=frozenset({Scope.services_read}),
        tags=TAGS,
    ),
    Operation(
        name="add_traffic",
        summary="Buy GB of traffic for a metered service's current period at its per-GB rate (wallet).",
        method="POST",
        path="/customer/services/{service_id}/traffic",
        handler=add_traffic,
        input=AddTrafficIn,
        output=AddTrafficOut,
        scopes=frozenset({Scope.services_write, Scope.wallet_spend}),
        effect=Effect.SPENDS_MONEY,
        tags=TAGS,
    ),
    Operation(
        name="set_auto_topup",
        summary="Turn the auto top-up of a metered service on (threshold %, GB, times per period) or off.",
        method="PUT",
        path="/customer/services/{service_id}/traffic/auto-top-up",
        handler=set_auto_topup,
        input=AutoTopupIn,
        output=QuotaOut,
        scopes=frozenset({Scope.services_write}),
        effect=Effect.WRITE,
        tags=TAGS,
        extra={"errors": (Conflict,)},  # a service without a traffic quota
    ),
)
