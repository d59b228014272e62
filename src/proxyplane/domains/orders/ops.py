"""Operations: countries, pricing-info, auto-plan, quote, composite order."""

from __future__ import annotations

import uuid
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from proxyplane.core.bounds import IPV4, documented
from proxyplane.core.errors import ValidationFailed
from proxyplane.core.scopes import Scope
from proxyplane.domains.accounts.service import get_customer
from proxyplane.domains.orders import service as orders
from proxyplane.domains.orders.countries_ops import GEO_ENUM, KIND_ENUM
from proxyplane.domains.orders.places import place_segment
from proxyplane.domains.pricing import Segment, pricing_info
from proxyplane.domains.pricing.store import load_pricebooks
from proxyplane.domains.services.schemas import ServiceOut, service_out
from proxyplane.domains.stock import service as stock
from proxyplane.domains.stock.autoplan import AutoPlanError, InsufficientStock, auto_plan
from proxyplane.domains.wallet.deposits import on_deposit_settled
from proxyplane.ops import Auth, Context, Effect, Operation, register

on_deposit_settled(orders.settle_order_deposit)


# --- countries: countries_ops.py (registered first, as before) --------------------------------------


# --- pricing-info ---------------------------------------------------------------------------------


class PricingInfoOut(BaseModel):
    currency: str = "USD"
    products: dict[str, dict[str, Any]] = Field(
        description="per product kind: base price, volume tiers, term discounts, order minimums, "
        "included connections and whitelist slots, add-on prices, refresh prices"
    )


async def get_pricing_info(ctx: Context, _: None) -> PricingInfoOut:
    books = await load_pricebooks(ctx.session)
    return PricingInfoOut(products={kind: pricing_info(book) for kind, book in books.items()})


# --- auto-plan ------------------------------------------------------------------------------------


class SegmentIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    country: str = Field(min_length=2, max_length=2, description="ISO 3166-1 alpha-2")
    count: int = Field(ge=1, le=100000)


class PlacedSegmentIn(SegmentIn):
    region: str | None = Field(
        default=None, min_length=1, max_length=100,
        description="only IPs the geo data places in this region (its name or ISO 3166-2 code without the "
        "country, compared as list_cities' region_option); static pools",
    )
    city: str | None = Field(
        default=None, min_length=1, max_length=100,
        description="only IPs the geo data places in this city (compared as list_cities' city_option); "
        "static pools",
    )

    def segment(self) -> tuple[str, int] | Segment:
        if self.region is None and self.city is None:
            return (self.country, self.count)
        return place_segment(self.country, self.count, self.region, self.city)


class AutoPlanIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    total_ips: int = Field(ge=1, le=100000, description="total IP count to spread")
    excluded_countries: list[str] = Field(default_factory=list)
    product_kind: str = Field(default="proxy_datacenter", json_schema_extra=KIND_ENUM)
    geo_source: str = Field(default="maxmind", json_schema_extra=GEO_ENUM)


class AutoPlanOut(BaseModel):
    product_kind: str
    geo_source: str
    total_ips: int
    segments: list[SegmentIn]


async def post_auto_plan(ctx: Context, data: AutoPlanIn) -> AutoPlanOut:
    stock.check_pool(data.product_kind, data.geo_source)
    avail = await stock.availability(ctx.session, data.product_kind, data.geo_source)
    try:
        plan = auto_plan(data.total_ips, avail, data.excluded_countries)
    except InsufficientStock as exc:
        raise stock.OutOfStock(str(exc), available=exc.available) from None
    except AutoPlanError as exc:
        raise ValidationFailed(str(exc), field="total_ips") from None
    return AutoPlanOut(
        product_kind=data.product_kind,
        geo_source=data.geo_source,
        total_ips=data.total_ips,
        segments=[SegmentIn(country=c, count=n) for c, n in plan],
    )


# --- quote ----------------------------------------------------------------------------------------


class QuoteIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    product_kind: str = Field(
        description="proxy_datacenter, proxy_isp, proxy_personal or proxy_ipv6 (ip_count: /64 subnets)",
        json_schema_extra=KIND_ENUM,
    )
    period_months: int = Field(description="1, 3, 6 or 12", json_schema_extra=documented(enum=[1, 3, 6, 12]))
    segments: list[PlacedSegmentIn] = Field(min_length=1, max_length=300)
    geo_source: str = Field(default="maxmind", json_schema_extra=GEO_ENUM)


class QuoteSegmentOut(BaseModel):
    country: str
    count: int
    region: str | None = Field(default=None, description="the segment's region, as a geo key")
    city: str | None = Field(default=None, description="the segment's city, as a geo key")
    available_ips: int
    list_unit_price_cents: int = Field(description="base price per IP per month")
    unit_price_cents: int = Field(description="per IP per month at the volume tier")
    volume_discount_cents: int = Field(description="per month")
    monthly_cents: int
    term_discount_cents: int
    total_cents: int = Field(description="for the whole period")
    retail_monthly_cents: int | None
    retail_total_cents: int | None
    partner_discount_cents: int | None = Field(description="over the whole period")


class QuoteError(BaseModel):
    country: str | None = Field(description="null for an error of the whole order (its minimum)")
    requested: int
    available: int
    message: str
    error: str = Field(
        description="insufficient_stock, unknown_country or order_below_minimum (the code an order "
        "with this error is refused with)",
        json_schema_extra=documented(enum=["insufficient_stock", "unknown_country", "order_below_minimum"]),
    )
    minimum_ips: int | None = Field(default=None, description="order_below_minimum: the minimum IP count")
    minimum_monthly_cents: int | None = Field(
        default=None, description="order_below_minimum: the minimum retail monthly total"
    )
    monthly_cents: int | None = Field(
        default=None, description="order_below_minimum: this order's retail monthly total"
    )
    region: str | None = Field(default=None, description="a placed segment's region (geo key)")
    city: str | None = Field(default=None, description="a placed segment's city (geo key)")


class QuoteOut(BaseModel):
    binding: bool = False
    currency: str = "USD"
    product_kind: str
    geo_source: str
    period_months: int
    ip_count: int
    segments: list[QuoteSegmentOut]
    volume_tier_min_ips: int
    unit_price_cents: int
    volume_discount_cents: int = Field(description="per month, all segments")
    volume_discount_basis_points: int
    term_discount_percent: int
    term_discount_cents: int
    monthly_total_cents: int
    total_cents: int = Field(description="price of the whole period (what the order charges)")
    retail_monthly_total_cents: int | None
    retail_total_cents: int | None
    partner_discount_percent: int | None
    partner_discount_cents: int | None
    errors: list[QuoteError]


async def _partner_percent(ctx: Context) -> int:
    if ctx.caller.customer_id is None:
        return 0
    return (await get_customer(ctx.session, ctx.caller.customer_id)).partner_discount_percent


def quote_out(priced: orders.Priced, geo_source: str) -> QuoteOut:
    q = priced.quote
    partner = q.partner_discount_percent > 0
    base = q.lines[0].list_unit_cents if q.lines else 0
    bp = round(((base - q.tier.unit_price_cents) * 10000) / base) if base else 0

    def opt(value: int) -> int | None:
        return value if partner else None

    return QuoteOut(
        product_kind=q.product_kind,
        geo_source=geo_source,
        period_months=q.period_months,
        ip_count=q.ip_count,
        segments=[
            QuoteSegmentOut(
                country=line.country,
                count=line.count,
                region=line.region,
                city=line.city,
                available_ips=priced.available(i),
                list_unit_price_cents=line.list_unit_cents,
                unit_price_cents=line.unit_price_cents,
                volume_discount_cents=line.volume_discount_cents,
                monthly_cents=line.monthly_cents,
                term_discount_cents=line.term_discount_cents,
                total_cents=line.total_cents,
                retail_monthly_cents=opt(line.retail_monthly_cents),
                retail_total_cents=opt(line.retail_total_cents),
                partner_discount_cents=opt(line.partner_discount_cents),
            )
            for i, line in enumerate(q.lines)
        ],
        volume_tier_min_ips=q.tier.min_ips,
        unit_price_cents=q.tier.unit_price_cents,
        volume_discount_cents=q.volume_discount_cents,
        volume_discount_basis_points=bp,
        term_discount_percent=q.term_discount_percent,
        term_discount_cents=q.term_discount_cents,
        monthly_total_cents=q.monthly_cents,
        total_cents=q.total_cents,
        retail_monthly_total_cents=opt(q.retail_monthly_cents),
        retail_total_cents=opt(q.retail_total_cents),
        partner_discount_percent=opt(q.partner_discount_percent),
        partner_discount_cents=opt(q.partner_discount_cents),
        errors=[QuoteError(**e.__dict__) for e in priced.errors],
    )


async def post_quote(ctx: Context, data: QuoteIn) -> QuoteOut:
    priced = await orders.price(
        ctx.session,
        data.product_kind,
        data.geo_source,
        data.period_months,
        [s.segment() for s in data.segments],
        await _partner_percent(ctx),
    )
    return quote_out(priced, data.geo_source)


# --- order ----------------------------------------------------------------------------------------


class OrderIn(QuoteIn):
    whitelist_ips: list[str] = Field(
        default_factory=list,
        max_length=100,
        description="single IPv4 addresses, at least one",
        json_schema_extra=documented(minItems=1, items={"type": "string", **IPV4}),
    )
    use_balance: bool = Field(
        default=False,
        description="true: pay from the wallet first, the rest at a processor checkout; "
        "false: pay everything at a processor checkout",
    )
    payment_method: str = Field(default="card", max_length=40, description="method of the checkout")
    idempotency_key: str = Field(min_length=1, max_length=200)


class OrderOut(BaseModel):
    order_id: int = Field(description="numeric order id (== service_number)")
    service: ServiceOut
    quote: QuoteOut
    total_cents: int
    wallet_paid_cents: int
    amount_due_cents: int = Field(description="to pay at checkout_url; 0 when the wallet paid everything")
    checkout_url: str | None
    deposit_id: uuid.UUID | None


async def post_order(ctx: Context, data: OrderIn) -> OrderOut:
    result = await orders.place_order(
        ctx.session,
        ctx.platform.secrets,
        ctx.platform.processor(),
        customer_id=ctx.customer_id,
        product_kind=data.product_kind,
        geo_source=data.geo_source,
        period_months=data.period_months,
        segments=[s.segment() for s in data.segments],
        whitelist_ips=data.whitelist_ips,
        use_balance=data.use_balance,
        payment_method=data.payment_method,
        idempotency_key=data.idempotency_key,
        balance_only=ctx.balance_only,
    )
    sid = result.service.service_id
    ctx.uow.after_commit(lambda: ctx.platform.emit("entitlements_changed", sid))
    return OrderOut(
        order_id=result.service.number,
        service=await service_out(
            ctx.session,
            ctx.platform.secrets,
            result.service,
            ips=result.ips,
            whitelist=result.whitelist,
            password=result.password,
        ),
        quote=quote_out(result.priced, data.geo_source),
        total_cents=result.priced.quote.total_cents,
        wallet_paid_cents=result.wallet_paid_cents,
        amount_due_cents=result.amount_due_cents,
        checkout_url=result.deposit.checkout_url if result.deposit else None,
        deposit_id=result.deposit.id if result.deposit else None,
    )


PRICING_INFO = Operation(
    name="get_pricing_info",
    summary="Live price books: volume tiers, term discounts, minimums, included connections, add-ons.",
    method="GET",
    path="/billing/composite/pricing-info",
    handler=get_pricing_info,
    output=PricingInfoOut,
    auth=Auth.NONE,
    tags=("billing",),
)
AUTO_PLAN = Operation(
    name="auto_plan",
    summary="Spread a total IP count over the countries in stock (no charge).",
    method="POST",
    path="/billing/composite/auto-plan",
    handler=post_auto_plan,
    input=AutoPlanIn,
    output=AutoPlanOut,
    auth=Auth.NONE,
    tags=("billing",),
)
QUOTE = Operation(
    name="quote_composite",
    summary="Price a mix of countries (or regions, cities) and a term. Non-binding, free, reserves nothing.",
    method="POST",
    path="/billing/composite/quote",
    handler=post_quote,
    input=QuoteIn,
    output=QuoteOut,
    auth=Auth.OPTIONAL,
    tags=("billing",),
)
ORDER = Operation(
    name="order_composite",
    summary="Buy a mix of countries (or regions, cities): one service; paid from the wallet and/or checkout.",
    method="POST",
    path="/billing/composite/order",
    handler=post_order,
    input=OrderIn,
    output=OrderOut,
    scopes=frozenset({Scope.wallet_spend}),
    effect=Effect.SPENDS_MONEY,
    status_code=201,
    tags=("billing",),
)
register(PRICING_INFO, AUTO_PLAN, QUOTE, ORDER)
