"""Operations: the catalog and buying a catalog product (POST /customer/services)."""

from __future__ import annotations

import uuid
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from proxyplane.core.bounds import INT32_MAX, IPV4, documented
from proxyplane.core.errors import NotFound, declares
from proxyplane.core.rotating_gateway import without_stored_gateway
from proxyplane.core.scopes import Scope
from proxyplane.domains.accounts.service import get_customer
from proxyplane.domains.catalog import service as catalog
from proxyplane.domains.invoices import service as invoices
from proxyplane.domains.orders.service import check_whitelist
from proxyplane.domains.services.ops import emit_changed
from proxyplane.domains.services.schemas import ServiceOut, service_out
from proxyplane.ops import Context, Effect, Operation, register
from proxyplane.storage.models import CatalogProduct


class PageQuery(BaseModel):
    offset: int = Field(default=0, ge=0, le=INT32_MAX)
    limit: int = Field(default=50, ge=1, le=100)


class ProductOut(BaseModel):
    product_id: uuid.UUID
    name: str
    description: str
    kind: str = Field(
        description="proxy_datacenter, proxy_isp, proxy_personal, proxy_ipv6 or proxy_rotating",
        json_schema_extra=documented(
            enum=["proxy_datacenter", "proxy_isp", "proxy_personal", "proxy_ipv6", "proxy_rotating"]
        ),
    )
    period_months: int
    price_cents: int = Field(description="your price for one period (partner discount applied)")
    retail_price_cents: int
    partner_discount_percent: int
    max_connections: int
    parameters_schema: dict[str, Any]
    details: dict[str, Any] = Field(description="what the product grants (IP count, plan, quota, gateway)")


class ProductPage(BaseModel):
    items: list[ProductOut]
    offset: int
    limit: int
    total: int


class ProductRef(BaseModel):
    product_id: uuid.UUID


class CreateServiceIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    product_id: uuid.UUID
    parameters: dict[str, Any] = Field(
        default_factory=dict, description="per the product's parameters_schema"
    )
    whitelist_ips: list[str] = Field(
        default_factory=list,
        max_length=100,
        description="single IPv4 addresses",
        json_schema_extra=documented(items={"type": "string", **IPV4}),  # what check_whitelist enforces
    )
    idempotency_key: str | None = Field(default=None, min_length=1, max_length=200)


class ServiceCreated(BaseModel):
    service: ServiceOut
    created: bool = Field(description="false: the same product and parameters were already bought")
    charged_cents: int
    invoice_id: str | None = Field(default=None, description="the purchase's invoice; null on a repeat")


async def _partner(ctx: Context) -> int:
    return (await get_customer(ctx.session, ctx.customer_id)).partner_discount_percent


def product_out(p: CatalogProduct, partner: int) -> ProductOut:
    return ProductOut(
        product_id=p.product_id,
        name=p.name,
        description=p.description,
        kind=p.kind,
        period_months=p.period_months,
        price_cents=catalog.customer_price(p, partner),
        retail_price_cents=p.price_cents,
        partner_discount_percent=partner,
        max_connections=p.max_connections,
        parameters_schema=p.parameters_schema or {},
        details=without_stored_gateway(p.config),
    )


async def list_catalog(ctx: Context, q: PageQuery) -> ProductPage:
    partner = await _partner(ctx)
    rows, total = await catalog.list_products(ctx.session, q.offset, q.limit)
    return ProductPage(
        items=[product_out(p, partner) for p in rows], offset=q.offset, limit=q.limit, total=total
    )


async def get_catalog_product(ctx: Context, data: ProductRef) -> ProductOut:
    return product_out(await catalog.get_product(ctx.session, data.product_id), await _partner(ctx))


async def create_service(ctx: Context, data: CreateServiceIn) -> ServiceCreated:
    whitelist = check_whitelist(data.whitelist_ips) if data.whitelist_ips else []
    svc, created = await catalog.buy(
        ctx.session,
        ctx.platform.secrets,
        customer_id=ctx.customer_id,
        partner_percent=await _partner(ctx),
        product_id=data.product_id,
        parameters=data.parameters,
        whitelist_ips=whitelist,
    )
    invoice_id = None
    if created:
        emit_changed(ctx, svc.service_id)
        rows, _ = await invoices.list_for_customer(
            ctx.session, ctx.customer_id, 0, 1, service_id=svc.service_id
        )
        invoice_id = str(rows[0].id) if rows else None
    return ServiceCreated(
        service=await service_out(ctx.session, ctx.platform.secrets, svc),
        created=created,
        charged_cents=svc.wallet_paid_cents if created else 0,
        invoice_id=invoice_id,
    )


LIST = Operation(
    name="list_catalog",
    summary="Catalog products with your prices.",
    method="GET",
    path="/customer/catalog",
    handler=list_catalog,
    input=PageQuery,
    output=ProductPage,
    scopes=frozenset({Scope.catalog_read}),
    tags=("catalog",),
)
GET = Operation(
    name="get_catalog_product",
    summary="One catalog product with your price.",
    method="GET",
    path="/customer/catalog/{product_id}",
    handler=get_catalog_product,
    input=ProductRef,
    output=ProductOut,
    scopes=frozenset({Scope.catalog_read}),
    tags=("catalog",),
)
CREATE = Operation(
    name="create_service",
    extra=declares(NotFound),  # an unknown product_id
    summary="Buy a catalog product from the wallet; the same product and parameters return the "
    "existing service without a second charge.",
    method="POST",
    path="/customer/services",
    handler=create_service,
    input=CreateServiceIn,
    output=ServiceCreated,
    scopes=frozenset({Scope.services_write, Scope.wallet_spend}),
    effect=Effect.SPENDS_MONEY,
    status_code=201,
    tags=("services",),
)
register(LIST, GET, CREATE)
