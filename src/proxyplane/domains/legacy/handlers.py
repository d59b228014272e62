"""The legacy endpoints as operations run through `ops.invoke` (scope check, one unit of work, one
commit). They are not registered: REST v1 and MCP do not serve them. Each handler calls the same domain
functions the v1 operations use and returns legacy-shaped data; legacy error bodies are raised as
Refused (the transaction then rolls back)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from proxyplane.core.errors import DomainError
from proxyplane.core.rotating_gateway import rotating_gateway
from proxyplane.core.scopes import Scope
from proxyplane.domains.accounts.service import get_customer
from proxyplane.domains.catalog import service as catalog
from proxyplane.domains.legacy import products as legacy_products
from proxyplane.domains.legacy import views
from proxyplane.domains.legacy.billing import latest_invoice_id
from proxyplane.domains.legacy.wire import (
    CLIENT_NOT_FOUND,
    PRODUCT_NOT_FOUND,
    SETIP_REQUIRED,
    UNPROCESSABLE,
    Money,
    Refused,
    fail,
)
from proxyplane.domains.orders import service as orders
from proxyplane.domains.pricing.store import load_pricebooks
from proxyplane.domains.services import service as services
from proxyplane.domains.services.ops import emit_changed
from proxyplane.domains.stock import service as stock
from proxyplane.ops import LEGACY, Context, Effect, Operation
from proxyplane.storage.models import Service

ORDER_FIELDS = ("productId", "productName", "price", "groupId", "groupName", "created_at")


class Ref(BaseModel):
    id: str = ""


class ProductOrder(BaseModel):
    pid: str
    clientid: Any = None
    setip: Any = None


def client_number(raw: Any) -> int | None:
    """`clientid` as an integer or a string of digits (PHP forms send "1"); None for anything else."""
    if isinstance(raw, bool):
        return None
    if isinstance(raw, int):
        return raw
    if isinstance(raw, str) and raw.isascii() and raw.isdigit() and len(raw) <= 12:
        return int(raw)
    return None


def number(raw: str, message: str = UNPROCESSABLE, status: int = 422) -> int:
    if not raw.isascii() or not raw.isdigit() or len(raw) > 12:
        raise fail(message, status)
    return int(raw)


async def owned_service(ctx: Context, raw: str, message: str = UNPROCESSABLE, status: int = 422) -> Service:
    svc = await services.get_by_number(ctx.session, number(raw, message, status))
    if svc is None or svc.customer_id != ctx.customer_id:
        raise fail(message, status)
    return svc


async def _partner(ctx: Context) -> int:
    return (await get_customer(ctx.session, ctx.customer_id)).partner_discount_percent


# --- clients, services ------------------------------------------------------------------------------


async def clients(ctx: Context, _: Ref) -> list[dict[str, Any]]:
    customer = await get_customer(ctx.session, ctx.customer_id)
    return [{"id": customer.id, "email": customer.email}]


async def list_services(ctx: Context, _: Ref) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    offset = 0
    while True:
        rows, total = await services.list_for_customer(ctx.session, ctx.customer_id, offset, 500)
        out.extend(views.service_list_item(s) for s in rows)
        offset += len(rows)
        if not rows or offset >= total:
            break
    return sorted(out, key=lambda item: int(item["service_id"]))


async def get_service(ctx: Context, ref: Ref) -> dict[str, Any]:
    svc = await owned_service(ctx, ref.id)
    return await views.service_object(
        ctx.session, ctx.platform.secrets, svc, await load_pricebooks(ctx.session)
    )


# --- products -----------------------------------------------------------------------------------------


async def list_products(ctx: Context, ref: Ref) -> list[dict[str, Any]]:
    """`ref.id`: the order-by field ("" = by productId)."""
    field = ref.id or "productId"
    if field not in ORDER_FIELDS:
        raise fail()
    items = [
        views.product_list_item(p)
        for p in await legacy_products.list_products(ctx.session, await _partner(ctx))
    ]

    def key(item: dict[str, Any]) -> tuple[Any, int]:
        value = item[field]
        return (value.cents if isinstance(value, Money) else value, int(item["productId"]))

    return sorted(items, key=key)


async def get_product(ctx: Context, ref: Ref) -> dict[str, Any]:
    pid = number(ref.id, PRODUCT_NOT_FOUND)
    product = await legacy_products.get_product(ctx.session, pid, await _partner(ctx))
    if product is None:
        raise fail(PRODUCT_NOT_FOUND)
    return views.product_object(product)


async def order_product(ctx: Context, data: ProductOrder) -> dict[str, Any]:
    """Buy a product paid from the credit. Composite ids buy the product's smallest order (a bound IP in
    `setip` is required: v1 orders need a whitelist); catalog ids buy the catalog product."""
    if client_number(data.clientid) != ctx.customer_id:
        raise fail(CLIENT_NOT_FOUND)
    partner = await _partner(ctx)
    product = await legacy_products.get_product(ctx.session, number(data.pid), partner)
    if product is None or product.hidden:
        raise fail()
    whitelist: list[str] = []
    if data.setip is not None and not product.rotating:
        if not isinstance(data.setip, str):
            raise fail()
        try:
            whitelist = orders.check_whitelist([data.setip])
        except DomainError:
            raise fail() from None
    try:
        if product.catalog is None:
            svc = await _order_composite(ctx, product, partner, whitelist)
            charged = svc.wallet_paid_cents
        else:
            svc, created = await catalog.buy(
                ctx.session,
                ctx.platform.secrets,
                customer_id=ctx.customer_id,
                partner_percent=partner,
                product_id=product.catalog.product_id,
                parameters=await _default_parameters(ctx, product),
                whitelist_ips=whitelist,
            )
            charged = svc.wallet_paid_cents if created else 0
    except Refused:
        raise
    except DomainError:
        raise fail() from None
    emit_changed(ctx, svc.service_id)
    ips = await services.service_ips(ctx.session, svc.service_id)
    return {
        "serviceId": svc.number,
        "orderId": svc.number,
        "invoiceId": await latest_invoice_id(ctx, svc),
        "amount": Money(charged),
        "ip": ips[0].address if ips else rotating_gateway().host,
    }


async def _order_composite(
    ctx: Context, product: legacy_products.LegacyProduct, partner: int, whitelist: list[str]
) -> Service:
    if not whitelist:
        raise fail(SETIP_REQUIRED)
    result = await orders.place_order(
        ctx.session,
        ctx.platform.secrets,
        ctx.platform.processor(),
        customer_id=ctx.customer_id,
        partner_discount_percent=partner,
        product_kind=product.kind,
        geo_source="maxmind",
        period_months=1,
        segments=[(product.country, product.ip_count)],
        whitelist_ips=whitelist,
        use_balance=True,
        payment_method="card",
        idempotency_key=f"legacy:{product.number}",
    )
    if result.amount_due_cents > 0:  # legacy purchases are paid from the credit only: roll it all back
        raise fail()
    return result.service


async def _default_parameters(ctx: Context, product: legacy_products.LegacyProduct) -> dict[str, Any]:
    """Legacy POST sends no parameters: a required `country` takes the allowed country with the most
    stock, any other required enum parameter its first value."""
    assert product.catalog is not None
    schema = product.catalog.parameters_schema or {}
    out: dict[str, Any] = {}
    for name in schema.get("required", []):
        choices = list(schema.get("properties", {}).get(name, {}).get("enum") or [])
        if name == "country" and product.geo:
            avail = await stock.availability(ctx.session, product.kind, "maxmind")
            out[name] = sorted(product.geo, key=lambda c: (-avail.get(c, 0), c))[0]
        elif choices:
            out[name] = choices[0]
    return out


def op(name: str, handler: Any, scopes: set[str], effect: Effect = Effect.READ) -> Operation:
    return Operation(
        name=f"legacy_{name}",
        doors=LEGACY,
        summary=f"legacy API: {name}",
        method="GET" if effect == Effect.READ else "POST",
        path=f"/api/{name}",
        handler=handler,
        input=Ref,
        scopes=frozenset(scopes),
        effect=effect,
        mcp=False,
    )


CLIENTS = op("clients", clients, {Scope.customer_read})
SERVICES = op("services", list_services, {Scope.services_read})
SERVICE = op("service", get_service, {Scope.services_read})
PRODUCTS = op("products", list_products, {Scope.catalog_read})
PRODUCT = op("product", get_product, {Scope.catalog_read})
ORDER = op("order_product", order_product, {Scope.services_write, Scope.wallet_spend}, Effect.SPENDS_MONEY)
