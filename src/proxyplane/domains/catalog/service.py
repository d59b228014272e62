"""The catalog: fixed products (including rotating plans) bought from the wallet with
POST /customer/services. The same product + parameters for the same customer returns the live service
already bought (a unique (customer_id, purchase_key) guards concurrent duplicates)."""

from __future__ import annotations

import hashlib
import json
import uuid
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.core.errors import NotFound, ValidationFailed
from proxyplane.core.product_names import months
from proxyplane.core.rotating_gateway import without_stored_gateway
from proxyplane.core.security import SecretBox
from proxyplane.domains.invoices import service as invoices
from proxyplane.domains.pricing.money import percent_of, round_half_up
from proxyplane.domains.quotas import service as quotas
from proxyplane.domains.services import service as services
from proxyplane.domains.stock import service as stock
from proxyplane.domains.stock.autoplan import InsufficientStock, auto_plan
from proxyplane.domains.wallet import service as wallet
from proxyplane.storage.models import CatalogProduct, Service

CATALOG_KINDS = ("proxy_datacenter", "proxy_isp", "proxy_personal", "proxy_rotating")


def customer_price(product: CatalogProduct, partner_percent: int) -> int:
    return product.price_cents - percent_of(product.price_cents, partner_percent)


async def list_products(session: AsyncSession, offset: int, limit: int) -> tuple[list[CatalogProduct], int]:
    rows = await session.execute(
        select(CatalogProduct)
        .where(CatalogProduct.active.is_(True))
        .order_by(CatalogProduct.sort_order, CatalogProduct.name, CatalogProduct.product_id)
        .offset(offset)
        .limit(limit)
    )
    total = await session.scalar(
        select(func.count()).select_from(CatalogProduct).where(CatalogProduct.active.is_(True))
    )
    return list(rows.scalars()), int(total or 0)


async def get_product(session: AsyncSession, product_id: uuid.UUID) -> CatalogProduct:
    product = await session.get(CatalogProduct, product_id)
    if product is None or not product.active:
        raise NotFound(f"product {product_id} not found")
    return product


def validate_parameters(schema: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
    """A small JSON-Schema subset: object with `properties` (type string/integer/boolean, enum,
    minimum, maximum, default), `required`, no other keys."""
    props: dict[str, Any] = schema.get("properties", {})
    unknown = sorted(set(params) - set(props))
    if unknown:
        raise ValidationFailed(f"unknown parameter(s): {', '.join(unknown)}", field="parameters")
    out: dict[str, Any] = {}
    for name, spec in props.items():
        if name not in params:
            if name in schema.get("required", []):
                raise ValidationFailed(f"parameter {name!r} is required", field="parameters")
            if "default" in spec:
                out[name] = spec["default"]
            continue
        value = params[name]
        kind = spec.get("type")
        ok = {
            "string": isinstance(value, str),
            "integer": isinstance(value, int) and not isinstance(value, bool),
            "boolean": isinstance(value, bool),
        }.get(kind, True)
        if not ok:
            raise ValidationFailed(f"parameter {name!r} must be of type {kind}", field="parameters")
        if "enum" in spec and value not in spec["enum"]:
            raise ValidationFailed(f"parameter {name!r} must be one of {spec['enum']}", field="parameters")
        if "minimum" in spec and value < spec["minimum"]:
            raise ValidationFailed(f"parameter {name!r} must be >= {spec['minimum']}", field="parameters")
        if "maximum" in spec and value > spec["maximum"]:
            raise ValidationFailed(f"parameter {name!r} must be <= {spec['maximum']}", field="parameters")
        out[name] = value
    return out


def purchase_key(product_id: uuid.UUID, params: dict[str, Any]) -> str:
    raw = json.dumps({"product_id": str(product_id), "parameters": params}, sort_keys=True)
    return hashlib.sha256(raw.encode()).hexdigest()


async def find_purchase(session: AsyncSession, customer_id: int, key: str) -> Service | None:
    return (
        await session.execute(
            select(Service).where(Service.customer_id == customer_id, Service.purchase_key == key)
        )
    ).scalar_one_or_none()


async def buy(
    session: AsyncSession,
    box: SecretBox,
    *,
    customer_id: int,
    partner_percent: int,
    product_id: uuid.UUID,
    parameters: dict[str, Any],
    whitelist_ips: list[str],
) -> tuple[Service, bool]:
    """(service, created). Paid from the wallet (402 when short, nothing changed); a new purchase gets
    a paid `catalog` invoice (its total is the price charged, 0 for a free product)."""
    product = await get_product(session, product_id)
    params = validate_parameters(product.parameters_schema or {}, parameters)
    key = purchase_key(product.product_id, params)
    existing = await find_purchase(session, customer_id, key)
    if existing is not None:
        return existing, False
    config = without_stored_gateway(product.config)  # connection details come from the settings
    price = customer_price(product, partner_percent)
    try:
        async with session.begin_nested():
            svc = await services.create_service(
                session,
                box,
                customer_id=customer_id,
                product_kind=product.kind,
                product_id=product.product_id,
                period_months=product.period_months,
                geo_source=str(params.get("geo_source", config.get("geo_source", "maxmind"))),
                whitelist=whitelist_ips,
                renewal_price_cents=round_half_up(price, product.period_months),
                period_price_cents=price,
                max_connections=product.max_connections,
                parameters={**config, **params, "product_name": product.name},
                purchase_key=key,
            )
    except IntegrityError:
        existing = await find_purchase(session, customer_id, key)
        if existing is None:
            raise
        return existing, False
    entry = None
    if price > 0:
        entry = await wallet.debit(
            session,
            customer_id,
            price,
            "purchase",
            f"{product.name} (service #{svc.number})",
            service_id=svc.service_id,
        )
    svc.wallet_paid_cents = price
    await invoices.record_charge(
        session,
        customer_id,
        kind="catalog",
        description=f"{product.name} (service #{svc.number})",
        lines=[invoices.Line(f"{product.name}, {months(product.period_months)}", 1, price, price)],
        service_id=svc.service_id,
        ledger_entries=[entry],
    )
    if product.kind != "proxy_rotating":
        count = int(config.get("ip_count", 1))
        country = params.get("country", config.get("country"))
        avail = await stock.availability(session, product.kind, svc.geo_source)
        if country:
            segments = [(str(country).upper(), count)]
        else:
            try:
                segments = auto_plan(count, avail)
            except InsufficientStock as exc:
                raise stock.OutOfStock(str(exc)) from None
        svc.segments = [{"country": c, "count": n} for c, n in segments]
        await stock.allocate(session, svc.service_id, product.kind, svc.geo_source, segments)
    services.activate(svc)
    await session.flush()
    await quotas.ensure_row(session, svc)  # a plan that meters traffic (issue 32)
    return svc, True
