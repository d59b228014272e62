"""Operations: add-IPs quote and purchase, refresh status and IP refresh."""

from __future__ import annotations

import uuid
from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from proxyplane.core.bounds import documented
from proxyplane.core.clock import utcnow
from proxyplane.core.errors import Conflict, declares
from proxyplane.core.scopes import Scope
from proxyplane.domains.accounts.service import get_customer
from proxyplane.domains.ips import service as ips
from proxyplane.domains.services import service as services
from proxyplane.domains.services.schemas import ServiceIpOut
from proxyplane.ops import Context, Effect, Operation, register


class SegmentIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    country: str = Field(min_length=2, max_length=2, description="ISO 3166-1 alpha-2")
    count: int = Field(ge=1, le=100000)


class AddIpsQuoteIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    service_id: uuid.UUID
    segments: list[SegmentIn] = Field(min_length=1, max_length=300, description="IPs to add per country")


class AddIpsIn(AddIpsQuoteIn):
    idempotency_key: str = Field(min_length=1, max_length=200)


class AddedLineOut(BaseModel):
    country: str
    count: int
    unit_price_cents: int = Field(description="per IP per month, at the tier of the service's new total")
    term_price_cents: int = Field(description="these IPs for a whole term (before proration)")


class AddIpsQuoteOut(BaseModel):
    binding: bool = False
    service_id: uuid.UUID
    added: list[AddedLineOut]
    added_ip_count: int
    charge_cents: int = Field(description="prorated charge for the rest of the current term")
    term_end: datetime
    current_renewal_monthly_cents: int
    new_renewal_monthly_cents: int
    period_months: int
    new_renewal_price_cents: int = Field(description="what the next renewal of period_months will cost")
    errors: list[dict[str, object]] = Field(description="segments that cannot be fulfilled now")


class AddIpsOut(AddIpsQuoteOut):
    charged_cents: int
    new_ips: list[ServiceIpOut]
    ip_count: int
    invoice_id: str | None


class ServiceRef(BaseModel):
    service_id: uuid.UUID


class RefreshStatusOut(BaseModel):
    service_id: uuid.UUID
    next_refresh: str = Field(
        description="free (scheduled) or paid (off-cycle)",
        json_schema_extra=documented(enum=["free", "paid"]),
    )
    free: bool
    free_refresh_interval_days: int
    next_free_refresh_at: datetime | None
    price_per_ip_cents: int = Field(description="off-cycle price per replaced IP")
    full_refresh_price_cents: int = Field(description="price of a paid refresh of the whole list (0 if free)")
    ip_count: int
    last_refresh_at: datetime | None


class RefreshIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    service_id: uuid.UUID
    target_ips: list[str] | None = Field(
        default=None,
        max_length=10000,
        description="only these addresses are replaced; omitted: the whole list",
    )
    idempotency_key: str = Field(min_length=1, max_length=200)


class ReplacedOut(BaseModel):
    old: str
    new: str
    country: str


class RefreshOut(BaseModel):
    service_id: uuid.UUID
    refresh: str = Field(description="free or paid", json_schema_extra=documented(enum=["free", "paid"]))
    charged_cents: int
    replaced: list[ReplacedOut]
    ips: list[ServiceIpOut]
    invoice_id: str | None


async def _partner(ctx: Context) -> int:
    return (await get_customer(ctx.session, ctx.customer_id)).partner_discount_percent


def _quote_out(svc_id: uuid.UUID, svc_months: int, aq: ips.AddQuote) -> dict[str, object]:
    return dict(
        service_id=svc_id,
        added=[
            AddedLineOut(
                country=line.country,
                count=line.count,
                unit_price_cents=line.unit_price_cents,
                term_price_cents=line.total_cents,
            )
            for line in aq.quote.added.lines
        ],
        added_ip_count=aq.quote.added.ip_count,
        charge_cents=aq.quote.charge_cents,
        term_end=aq.term_end,
        current_renewal_monthly_cents=aq.current_renewal_monthly_cents,
        new_renewal_monthly_cents=aq.new_renewal_monthly_cents,
        period_months=svc_months,
        new_renewal_price_cents=aq.new_renewal_price_cents,
        errors=aq.errors,
    )


def emit_changed(ctx: Context, service_id: uuid.UUID) -> None:
    ctx.uow.after_commit(lambda: ctx.platform.emit(services.ENTITLEMENTS_CHANGED, service_id))


async def quote_add_ips(ctx: Context, data: AddIpsQuoteIn) -> AddIpsQuoteOut:
    svc = await services.get_owned(ctx.session, ctx.customer_id, data.service_id)
    aq = await ips.quote_add(
        ctx.session, svc, [(s.country, s.count) for s in data.segments], await _partner(ctx), utcnow()
    )
    return AddIpsQuoteOut(**_quote_out(svc.service_id, svc.period_months, aq))  # type: ignore[arg-type]


async def add_ips(ctx: Context, data: AddIpsIn) -> AddIpsOut:
    svc = await services.get_owned(ctx.session, ctx.customer_id, data.service_id)
    aq, new_rows, invoice_id = await ips.add_ips(
        ctx.session,
        svc,
        [(s.country, s.count) for s in data.segments],
        await _partner(ctx),
    )
    emit_changed(ctx, svc.service_id)
    return AddIpsOut(
        **_quote_out(svc.service_id, svc.period_months, aq),  # type: ignore[arg-type]
        charged_cents=aq.quote.charge_cents,
        new_ips=[ServiceIpOut(ip=r.address, port=r.port, country=r.country) for r in new_rows],
        ip_count=len(await services.service_ips(ctx.session, svc.service_id)),
        invoice_id=str(invoice_id) if invoice_id is not None else None,
    )


async def get_refresh_status(ctx: Context, data: ServiceRef) -> RefreshStatusOut:
    svc = await services.get_owned(ctx.session, ctx.customer_id, data.service_id)
    st = await ips.refresh_status(ctx.session, svc, await _partner(ctx), utcnow())
    return RefreshStatusOut(
        service_id=svc.service_id,
        next_refresh="free" if st.free else "paid",
        free=st.free,
        free_refresh_interval_days=st.interval_days,
        next_free_refresh_at=st.next_free_at,
        price_per_ip_cents=st.price_per_ip_cents,
        full_refresh_price_cents=0 if st.free else st.full_price_cents,
        ip_count=st.ip_count,
        last_refresh_at=st.last_refresh_at,
    )


async def refresh_ips(ctx: Context, data: RefreshIn) -> RefreshOut:
    svc = await services.get_owned(ctx.session, ctx.customer_id, data.service_id)
    result = await ips.refresh(
        ctx.session,
        svc,
        data.target_ips,
        await _partner(ctx),
        can_spend=Scope.wallet_spend in ctx.caller.scopes,
    )
    emit_changed(ctx, svc.service_id)
    live = await services.service_ips(ctx.session, svc.service_id)
    return RefreshOut(
        service_id=svc.service_id,
        refresh=result.kind,
        charged_cents=result.charged_cents,
        replaced=[ReplacedOut(**r) for r in result.replaced],
        ips=[ServiceIpOut(ip=r.address, port=r.port, country=r.country) for r in live],
        invoice_id=str(result.invoice_id) if result.invoice_id is not None else None,
    )


ADD_QUOTE = Operation(
    name="quote_add_ips",
    extra=declares(Conflict),
    summary="Price adding IPs to a service: prorated charge for the rest of the term, new renewal price. "
    "Charges and changes nothing.",
    method="POST",
    path="/billing/services/{service_id}/add-ips/quote",
    handler=quote_add_ips,
    input=AddIpsQuoteIn,
    output=AddIpsQuoteOut,
    scopes=frozenset({Scope.services_read}),
    tags=("services",),
)
ADD = Operation(
    name="add_ips",
    summary="Add IPs (same countries or new ones) to a service; charges the prorated amount from the wallet "
    "and raises the renewal price.",
    method="POST",
    path="/billing/services/{service_id}/add-ips",
    handler=add_ips,
    input=AddIpsIn,
    output=AddIpsOut,
    scopes=frozenset({Scope.services_write, Scope.wallet_spend}),
    effect=Effect.SPENDS_MONEY,
    tags=("services",),
)
REFRESH_STATUS = Operation(
    name="get_refresh_status",
    summary="Whether the next IP refresh is free (scheduled) or paid (off-cycle), and its price.",
    method="GET",
    path="/customer/services/{service_id}/proxy/refresh-status",
    handler=get_refresh_status,
    input=ServiceRef,
    output=RefreshStatusOut,
    scopes=frozenset({Scope.services_read}),
    tags=("proxy",),
)
REFRESH = Operation(
    name="refresh_ips",
    summary="Replace the whole IP list or only target_ips with new IPs of the same countries; free once per "
    "interval, otherwise charged to the wallet (needs wallet:spend then).",
    method="POST",
    path="/customer/services/{service_id}/proxy/refresh",
    handler=refresh_ips,
    input=RefreshIn,
    output=RefreshOut,
    scopes=frozenset({Scope.services_write}),
    effect=Effect.SPENDS_MONEY,
    tags=("proxy",),
)
register(ADD_QUOTE, ADD, REFRESH_STATUS, REFRESH)
