"""Operations: list, get, renew and cancel services."""

from __future__ import annotations

import uuid
from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from proxyplane.core.bounds import INT32_MAX, documented
from proxyplane.core.clock import utcnow
from proxyplane.core.errors import ValidationFailed
from proxyplane.core.scopes import Scope
from proxyplane.domains.pricing import PricingError
from proxyplane.domains.pricing.store import load_pricebooks
from proxyplane.domains.renewals import service as renewals
from proxyplane.domains.services import refunds
from proxyplane.domains.services import service as services
from proxyplane.domains.services.schemas import ServiceOut, service_out
from proxyplane.ops import Context, Effect, Operation, register
from proxyplane.storage.models import Service


class PageQuery(BaseModel):
    offset: int = Field(default=0, ge=0, le=INT32_MAX)
    limit: int = Field(default=50, ge=1, le=100)


class ServicePage(BaseModel):
    items: list[ServiceOut]
    offset: int
    limit: int
    total: int


class ServiceRef(BaseModel):
    service_id: uuid.UUID


class RenewIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    service_id: uuid.UUID
    period_months: int = Field(description="1, 3, 6 or 12", json_schema_extra=documented(enum=[1, 3, 6, 12]))
    idempotency_key: str = Field(min_length=1, max_length=200)


class RenewOut(BaseModel):
    service: ServiceOut
    charged_cents: int


class CancelOut(BaseModel):
    service: ServiceOut
    refunded_cents: int = Field(description="total refunded to the wallet for this service's cancellation")


class CancelPreviewOut(BaseModel):
    service_id: uuid.UUID
    cancellable: bool = Field(description="false when the service is already cancelled or expired")
    refund_cents: int = Field(description="what cancelling now would refund to the wallet in total")
    service_refund_cents: int = Field(description="unused part of the paid term")
    addons_refund_cents: int = Field(description="unused part of the active add-ons")
    as_of: datetime = Field(description="the instant the amounts are computed for (pro rata to the second)")


def emit_changed(ctx: Context, service_id: uuid.UUID) -> None:
    ctx.uow.after_commit(lambda: ctx.platform.emit(services.ENTITLEMENTS_CHANGED, service_id))


async def term_percent(ctx: Context, svc: Service, months: int) -> int:
    if months not in services.PERIODS:
        raise ValidationFailed("period_months must be one of 1, 3, 6, 12", field="period_months")
    books = await load_pricebooks(ctx.session)
    book = books.get(svc.product_kind)
    if book is None:  # catalog-only kinds (rotating): no term discount
        return 0
    try:
        return book.term_discount_percent(months)
    except PricingError as exc:
        raise ValidationFailed(str(exc), field="period_months") from None


async def list_services(ctx: Context, q: PageQuery) -> ServicePage:
    rows, total = await services.list_for_customer(ctx.session, ctx.customer_id, q.offset, q.limit)
    ips, allowed = await services.page_details(ctx.session, [s.service_id for s in rows])
    items = [
        await service_out(
            ctx.session, ctx.platform.secrets, s, ips=ips[s.service_id], whitelist=allowed[s.service_id]
        )
        for s in rows
    ]
    return ServicePage(items=items, offset=q.offset, limit=q.limit, total=total)


async def get_service(ctx: Context, data: ServiceRef) -> ServiceOut:
    svc = await services.get_owned(ctx.session, ctx.customer_id, data.service_id)
    return await service_out(ctx.session, ctx.platform.secrets, svc)


async def renew_service(ctx: Context, data: RenewIn) -> RenewOut:
    svc = await services.get_owned(ctx.session, ctx.customer_id, data.service_id)
    percent = await term_percent(ctx, svc, data.period_months)
    charged = await services.renew(ctx.session, svc, data.period_months, percent)
    charged += await renewals.after_manual_renew(ctx.session, svc, data.period_months, charged)
    emit_changed(ctx, svc.service_id)
    return RenewOut(service=await service_out(ctx.session, ctx.platform.secrets, svc), charged_cents=charged)


async def cancel_service(ctx: Context, data: ServiceRef) -> CancelOut:
    svc = await services.get_owned(ctx.session, ctx.customer_id, data.service_id)
    refund = await services.cancel(ctx.session, svc)
    await renewals.after_cancel(ctx.session, svc, refund)  # add-ons' refund, credit notes
    emit_changed(ctx, svc.service_id)
    return CancelOut(
        service=await service_out(ctx.session, ctx.platform.secrets, svc),
        refunded_cents=await services.refunded_cents(ctx.session, svc.service_id),
    )


async def preview_cancel(ctx: Context, data: ServiceRef) -> CancelPreviewOut:
    svc = await services.get_owned(ctx.session, ctx.customer_id, data.service_id)
    now = utcnow()
    refund = await refunds.cancel_refund(ctx.session, svc, now)
    return CancelPreviewOut(
        service_id=svc.service_id,
        cancellable=refund.cancellable,
        refund_cents=refund.total_cents,
        service_refund_cents=refund.service_cents,
        addons_refund_cents=refund.addons_cents,
        as_of=now,
    )


LIST = Operation(
    name="list_services",
    summary="Your services, newest first.",
    method="GET",
    path="/customer/services",
    handler=list_services,
    input=PageQuery,
    output=ServicePage,
    scopes=frozenset({Scope.services_read}),
    tags=("services",),
)
GET = Operation(
    name="get_service",
    summary="One service: status, term, IPs, credentials (password masked), whitelist.",
    method="GET",
    path="/customer/services/{service_id}",
    handler=get_service,
    input=ServiceRef,
    output=ServiceOut,
    scopes=frozenset({Scope.services_read}),
    tags=("services",),
)
RENEW = Operation(
    name="renew_service",
    summary="Extend the term from its current end; charged to the wallet with the term discount.",
    method="POST",
    path="/customer/services/{service_id}/renew",
    handler=renew_service,
    input=RenewIn,
    output=RenewOut,
    scopes=frozenset({Scope.services_write, Scope.wallet_spend}),
    effect=Effect.SPENDS_MONEY,
    tags=("services",),
)
CANCEL = Operation(
    name="cancel_service",
    summary="Terminate now (idempotent); unused paid time is refunded to the wallet pro rata.",
    method="POST",
    path="/customer/services/{service_id}/cancel",
    handler=cancel_service,
    input=ServiceRef,
    output=CancelOut,
    scopes=frozenset({Scope.services_write}),
    effect=Effect.WRITE,
    tags=("services",),
)
PREVIEW_CANCEL = Operation(
    name="preview_cancel",
    summary="The refund cancelling now would give (service and add-ons); changes nothing.",
    method="GET",
    path="/customer/services/{service_id}/cancel/preview",
    handler=preview_cancel,
    input=ServiceRef,
    output=CancelPreviewOut,
    scopes=frozenset({Scope.services_read}),
    tags=("services",),
)
register(LIST, GET, RENEW, CANCEL, PREVIEW_CANCEL)
