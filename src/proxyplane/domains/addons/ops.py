"""Operations: add-ons available, buy, list active, cancel."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from proxyplane.core.bounds import CENTS_MAX, documented
from proxyplane.core.scopes import Scope
from proxyplane.domains.accounts.service import get_customer
from proxyplane.domains.addons import service as addons
from proxyplane.domains.addons.service import PriceGuard
from proxyplane.domains.pricing import ADDON_KINDS
from proxyplane.domains.services import service as services
from proxyplane.domains.wallet import service as wallet
from proxyplane.ops import Context, Effect, Operation, register
from proxyplane.storage.models.billing import ServiceAddon


class ServiceRef(BaseModel):
    service_id: uuid.UUID


class OfferOut(BaseModel):
    addon_type: str = Field(
        description="udp, extra_whitelist_slots or extra_connections",
        json_schema_extra=documented(enum=list(ADDON_KINDS)),
    )
    name: str
    per: str = Field(description="ip: priced per IP of the service; unit: per unit of unit_size")
    unit_size: int
    monthly_price_cents: int = Field(description="per month, quantity 1")
    price_cents: int = Field(description="charged now for quantity 1: the rest of the current term")
    paid_through: datetime | None = Field(description="end of the current term")


class AvailableOut(BaseModel):
    service_id: uuid.UUID
    balance_cents: int
    items: list[OfferOut]


class AddonOut(BaseModel):
    addon_id: uuid.UUID
    service_id: uuid.UUID
    addon_type: str
    status: str = Field(
        description="active or canceled", json_schema_extra=documented(enum=["active", "canceled"])
    )
    quantity: int
    parameters: dict[str, Any]
    purchase_price_cents: int
    monthly_price_cents: int
    activated_at: datetime
    paid_through: datetime
    canceled_at: datetime | None
    refunded_cents: int
    invoice_id: str | None


class AddonList(BaseModel):
    service_id: uuid.UUID
    items: list[AddonOut]


class PurchaseIn(BaseModel):
    """The price guard is `max_total_cents`, as on every other spending operation (issue 30.7); the older
    `expected_price_cents` still works. One of the two is required."""

    # one of the two guards is required: stated as anyOf in the MCP tool's schema; the REST body (a part
    # of this model) says it in words (a generated client drops a model with an anyOf of required lists)
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "anyOf": [{"required": ["max_total_cents"]}, {"required": ["expected_price_cents"]}]
        },
    )
    service_id: uuid.UUID
    addon_type: str = Field(
        description="udp, extra_whitelist_slots or extra_connections",
        json_schema_extra=documented(enum=list(ADDON_KINDS)),
    )
    quantity: int = Field(default=1, ge=1, le=1000, description="units (udp: always 1)")
    max_total_cents: int | None = Field(
        default=None,
        ge=0,
        le=CENTS_MAX,
        description="the most this call may charge, in cents; above it nothing is charged (409). "
        "Send one of max_total_cents and expected_price_cents",
    )
    expected_price_cents: int | None = Field(
        default=None,
        ge=0,
        le=CENTS_MAX,
        description="deprecated: send max_total_cents. The exact price you accept; a different price -> 409",
        json_schema_extra={"deprecated": True},
    )
    idempotency_key: str = Field(min_length=1, max_length=200)


class PurchaseOut(BaseModel):
    addon: AddonOut
    charged_cents: int
    balance_cents: int


class AddonRef(BaseModel):
    service_id: uuid.UUID
    addon_id: uuid.UUID


class AddonCancelOut(BaseModel):
    addon: AddonOut
    refunded_cents: int = Field(description="total refunded for this add-on")


def addon_out(a: ServiceAddon) -> AddonOut:
    return AddonOut(
        addon_id=a.addon_id,
        service_id=a.service_id,
        addon_type=a.kind,
        status=a.status,
        quantity=a.quantity,
        parameters=dict(a.parameters or {}),
        purchase_price_cents=a.purchase_price_cents,
        monthly_price_cents=a.monthly_cents,
        activated_at=a.activated_at,
        paid_through=a.period_end,
        canceled_at=a.canceled_at,
        refunded_cents=a.refunded_cents,
        invoice_id=str(a.invoice_id) if a.invoice_id is not None else None,
    )


async def partner_percent(ctx: Context) -> int:
    return (await get_customer(ctx.session, ctx.customer_id)).partner_discount_percent


def emit_changed(ctx: Context, service_id: uuid.UUID) -> None:
    ctx.uow.after_commit(lambda: ctx.platform.emit(services.ENTITLEMENTS_CHANGED, service_id))


async def list_available(ctx: Context, data: ServiceRef) -> AvailableOut:
    svc = await services.get_owned(ctx.session, ctx.customer_id, data.service_id)
    found = await addons.offers(ctx.session, svc, await partner_percent(ctx))
    return AvailableOut(
        service_id=svc.service_id,
        balance_cents=await wallet.balance(ctx.session, ctx.customer_id),
        items=[
            OfferOut(
                addon_type=o.kind,
                name=addons.NAMES.get(o.kind, o.kind),
                per=o.per,
                unit_size=o.unit_size,
                monthly_price_cents=o.monthly_cents,
                price_cents=o.price_cents,
                paid_through=svc.current_period_end,
            )
            for o in found
        ],
    )


async def list_active(ctx: Context, data: ServiceRef) -> AddonList:
    svc = await services.get_owned(ctx.session, ctx.customer_id, data.service_id)
    rows = await addons.active_addons(ctx.session, svc.service_id)
    return AddonList(service_id=svc.service_id, items=[addon_out(a) for a in rows])


async def buy_addon(ctx: Context, data: PurchaseIn) -> PurchaseOut:
    svc = await services.get_owned(ctx.session, ctx.customer_id, data.service_id)
    addon = await addons.purchase(
        ctx.session,
        svc,
        data.addon_type,
        data.quantity,
        PriceGuard(max_total_cents=data.max_total_cents, expected_cents=data.expected_price_cents),
        await partner_percent(ctx),
    )
    emit_changed(ctx, svc.service_id)
    return PurchaseOut(
        addon=addon_out(addon),
        charged_cents=addon.purchase_price_cents,
        balance_cents=await wallet.balance(ctx.session, ctx.customer_id),
    )


async def cancel_addon(ctx: Context, data: AddonRef) -> AddonCancelOut:
    svc = await services.get_owned(ctx.session, ctx.customer_id, data.service_id)
    addon = await addons.get_addon(ctx.session, svc, data.addon_id)
    await addons.cancel(ctx.session, addon)
    emit_changed(ctx, svc.service_id)
    return AddonCancelOut(addon=addon_out(addon), refunded_cents=addon.refunded_cents)


AVAILABLE = Operation(
    name="list_available_addons",
    summary="Add-ons you can buy for a service, with today's prices and your wallet balance.",
    method="GET",
    path="/billing/services/{service_id}/addons/available",
    handler=list_available,
    input=ServiceRef,
    output=AvailableOut,
    scopes=frozenset({Scope.services_write, Scope.wallet_spend}),
    tags=("add-ons",),
)
ACTIVE = Operation(
    name="list_addons",
    summary="Active add-ons of a service: type, status, purchase price, parameters, activation date.",
    method="GET",
    path="/billing/services/{service_id}/addons",
    handler=list_active,
    input=ServiceRef,
    output=AddonList,
    scopes=frozenset({Scope.services_read}),
    tags=("add-ons",),
)
BUY = Operation(
    name="buy_addon",
    summary="Buy an add-on for the rest of the term, paid from the wallet; 409 if the price differs.",
    method="POST",
    path="/billing/services/{service_id}/addons",
    handler=buy_addon,
    input=PurchaseIn,
    output=PurchaseOut,
    scopes=frozenset({Scope.services_write, Scope.wallet_spend}),
    effect=Effect.SPENDS_MONEY,
    status_code=201,
    tags=("add-ons",),
)
CANCEL = Operation(
    name="cancel_addon",
    summary="Cancel an add-on (idempotent); the unused time is refunded to the wallet pro rata.",
    method="DELETE",
    path="/billing/services/{service_id}/addons/{addon_id}",
    handler=cancel_addon,
    input=AddonRef,
    output=AddonCancelOut,
    scopes=frozenset({Scope.services_write}),
    effect=Effect.WRITE,
    tags=("add-ons",),
)
register(AVAILABLE, ACTIVE, BUY, CANCEL)
