"""The operator's stock, catalog products and price books (`proxyplane admin stock|product|price`) as
registered operations served by the "cli" door only (ops.operator_op): never REST or MCP.

The bulk import keeps its speed: the handler hands the parsed rows (a list for a file, the lazy RangeRows
for a range) straight to domains/stock/bulk.import_rows in the operation's one transaction; `progress`, a
callable the CLI passes (never part of any published schema), is told (rows handled, total) per chunk."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field
from pydantic.json_schema import SkipJsonSchema
from sqlalchemy import select

from proxyplane.core.errors import NotFound, ValidationFailed
from proxyplane.domains.geo import service as geo
from proxyplane.domains.pricing import pricing_info
from proxyplane.domains.pricing.store import load_pricebooks, reset_overrides, set_overrides
from proxyplane.domains.quotas import service as quotas
from proxyplane.domains.services.service import expire_due
from proxyplane.domains.stock import bulk
from proxyplane.domains.stock import service as stock
from proxyplane.domains.stock.seed import seed_demo
from proxyplane.domains.upstreams import service as upstreams
from proxyplane.ops import OPERATOR, OPERATOR_DOORS, Context, Effect, operator_op, register
from proxyplane.storage.models import CatalogProduct
from proxyplane.storage.repos import catalog

Pool = Literal["proxy_datacenter", "proxy_isp", "proxy_personal"]
ImportProgress = Callable[[int, int], None]  # (rows handled since the last call, total rows)


class Into(BaseModel):
    pool: Pool
    capacity: int | None = None  # services per IP (dedicated pools: always 1)
    port: int | None = None
    progress: SkipJsonSchema[ImportProgress | None] = Field(default=None, exclude=True)


class ImportFile(Into):
    file: str  # one `IP MAXMIND_COUNTRY [RIPE_COUNTRY]` per line, `#` comments


class AddRange(Into):
    range: str  # CIDR (127.0.5.0/24) or FIRST-LAST
    country: str  # per MaxMind
    ripe_country: str | None = None  # per RIPE (default: the same)


class Retire(BaseModel):
    addresses: list[str] = []
    range: str | None = None


class StockShow(BaseModel):
    pool: Pool | None = None
    geo_source: Literal["maxmind", "ripe"] = "maxmind"


class NoInput(BaseModel):
    pass


async def _import(ctx: Context, into: Into, rows: Iterable[bulk.Row], total: int) -> dict[str, int]:
    hook = into.progress
    progress = None if hook is None else (lambda n: hook(n, total))
    result = await bulk.import_rows(
        ctx.session, into.pool, rows, capacity=into.capacity, port=into.port, progress=progress
    )
    out = {"added": result.added, "skipped": result.skipped}
    found = geo.readers() if total <= geo.IMPORT_LOCATE_MAX else {}
    if found:  # issue 36: the import fills the geo data (a larger one: operator_geo_locate afterwards)
        stored = await geo.locate(ctx.session, [row[0] for row in rows], found)
        out.update({f"located_{source}": n for source, n in stored.items()})
    return out


async def import_file(ctx: Context, data: ImportFile) -> dict[str, int]:
    lines = Path(data.file).read_text().splitlines()
    rows = list(bulk.file_rows(lines))  # every line checked before anything is written
    return await _import(ctx, data, rows, len(rows))


async def add_range(ctx: Context, data: AddRange) -> dict[str, int]:
    first, last = bulk.range_bounds(data.range)
    rows = bulk.range_rows(first, last, data.country, data.ripe_country or data.country)
    return await _import(ctx, data, rows, last - first + 1)


async def retire(ctx: Context, data: Retire) -> dict[str, int]:
    wanted = list(data.addresses) + (stock.expand_range(data.range) if data.range else [])
    retired = 0
    for i in range(0, len(wanted), 10_000):  # bound parameters per statement (SQLite: 32,766)
        retired += await stock.retire_ips(ctx.session, wanted[i : i + 10_000])
    return {"retired": retired}


async def show(ctx: Context, data: StockShow) -> dict[str, Any]:
    out: dict[str, Any] = {"pools": await stock.pool_summary(ctx.session)}
    if data.pool:
        avail = await stock.availability(ctx.session, data.pool, data.geo_source)
        out["available"] = dict(sorted(avail.items(), key=lambda kv: (-kv[1], kv[0])))
    return out


async def seed(ctx: Context, _: NoInput) -> dict[str, int]:
    return await seed_demo(ctx.session)


async def expire(ctx: Context, _: NoInput) -> dict[str, list[str]]:
    return {"expired": [str(s) for s in await expire_due(ctx.session)]}


def product_json(p: CatalogProduct) -> dict[str, Any]:
    return {
        "product_id": str(p.product_id),
        "name": p.name,
        "kind": p.kind,
        "price_cents": p.price_cents,
        "period_months": p.period_months,
        "active": p.active,
        "max_connections": p.max_connections,
        "config": p.config,
        "parameters_schema": p.parameters_schema,
    }


class NewProduct(BaseModel):
    name: str
    kind: str
    price_cents: int = Field(ge=0)
    period_months: Literal[1, 3, 6, 12] = 1
    description: str = ""
    config: dict[str, Any] = {}
    parameters_schema: dict[str, Any] = {"type": "object", "properties": {}}
    max_connections: int = 100


class ProductChange(BaseModel):
    product_id: uuid.UUID
    price_cents: int | None = None
    active: bool | None = None
    # metered traffic (issue 32): set in the product's config, copied to the services bought from now on
    quota_bytes: int | None = None
    quota_requests: int | None = None
    quota_period: str | None = Field(default=None, description="term, month or none")
    gb_price_cents: int | None = None
    # a rotating product drawing from an upstream pool (issue 36.4; "" back to local exits), from now on
    upstream_pool: str | None = Field(default=None, max_length=40)


class PriceKind(BaseModel):
    kind: Pool | None = None


class PriceOverrides(BaseModel):
    kind: Pool
    overrides: dict[str, Any]


async def product_list(ctx: Context, _: NoInput) -> list[dict[str, Any]]:
    rows = (await ctx.session.execute(select(CatalogProduct).order_by(CatalogProduct.sort_order))).scalars()
    return [product_json(p) for p in rows]


async def product_add(ctx: Context, data: NewProduct) -> dict[str, Any]:
    quotas.validate_config(data.config)  # quota fields, period, per-GB rate (issue 32): 422 naming the field
    if data.config.get("upstream_pool"):  # a pool with a supplier (issue 36.4): 422 naming it otherwise
        await upstreams.check_product_pool(ctx.session, data.kind, str(data.config["upstream_pool"]))
    p = await catalog.add_product(
        ctx.session,
        {
            "name": data.name,
            "kind": data.kind,
            "price_cents": data.price_cents,
            "period_months": data.period_months,
            "description": data.description,
            "config": data.config,
            "parameters_schema": data.parameters_schema,
            "max_connections": data.max_connections,
        },
    )
    return product_json(p)


async def product_set(ctx: Context, data: ProductChange) -> dict[str, Any]:
    p = await ctx.session.get(CatalogProduct, data.product_id)
    if p is None:
        raise NotFound(f"product {data.product_id} not found")
    ctx.audit.update(target=f"product:{p.product_id}", before=product_json(p))  # the audit's before -> after
    if data.price_cents is not None:
        p.price_cents = data.price_cents
    if data.active is not None:
        p.active = data.active
    metered = {
        k: v
        for k in ("quota_bytes", "quota_requests", "quota_period", "gb_price_cents")
        if (v := getattr(data, k)) is not None
    }
    if metered:
        quotas.validate_config(metered, prefix="")  # the input's own fields
        p.config = {**(p.config or {}), **metered}
    if data.upstream_pool is not None:
        config = dict(p.config or {})
        if data.upstream_pool:
            await upstreams.check_product_pool(ctx.session, p.kind, data.upstream_pool)
            config["upstream_pool"] = data.upstream_pool
        else:
            config.pop("upstream_pool", None)
        p.config = config
    await ctx.session.flush()
    return product_json(p)


async def price_show(ctx: Context, data: PriceKind) -> dict[str, Any]:
    books = await load_pricebooks(ctx.session)
    return {k: pricing_info(b) for k, b in books.items() if data.kind in (None, k)}


async def price_set(ctx: Context, data: PriceOverrides) -> dict[str, Any]:
    ctx.audit["before"] = (await load_pricebooks(ctx.session))[data.kind].to_dict()
    try:
        book = await set_overrides(ctx.session, data.kind, data.overrides)
    except (ValueError, TypeError, KeyError) as exc:  # an invalid price book: 422 saying why, nothing stored
        raise ValidationFailed(f"overrides: {exc}", field="overrides") from None
    ctx.audit["after"] = book.to_dict()
    return pricing_info(book)


class PoolKind(BaseModel):
    kind: Pool


async def price_reset(ctx: Context, data: PoolKind) -> dict[str, Any]:
    ctx.audit["before"] = (await load_pricebooks(ctx.session))[data.kind].to_dict()
    await reset_overrides(ctx.session, data.kind)
    return {"reset": data.kind}


_R, _W, _CR, _CW = "stock.read", "stock.write", "catalog.read", "catalog.write"
# the import reads a file on the host: the CLI only
IMPORT_FILE = operator_op("stock_import", import_file, ImportFile, permission=_W, doors=OPERATOR)
ADD_RANGE = operator_op("stock_add_range", add_range, AddRange, permission=_W)
RETIRE = operator_op("stock_retire", retire, Retire, permission=_W)
SHOW = operator_op("stock_show", show, StockShow, Effect.READ, permission=_R, doors=OPERATOR_DOORS)
SEED_DEMO = operator_op("stock_seed_demo", seed, NoInput, permission=_W)
EXPIRE = operator_op("stock_expire", expire, NoInput, permission=_W)
# the catalog page of the console (adapters/admin/catalog.py) serves these too
_ALL = OPERATOR_DOORS
PRODUCT_LIST = operator_op("product_list", product_list, NoInput, Effect.READ, permission=_CR, doors=_ALL)
PRODUCT_ADD = operator_op("product_add", product_add, NewProduct, permission=_CW)
PRODUCT_SET = operator_op("product_set", product_set, ProductChange, permission=_CW, doors=_ALL)
PRICE_SHOW = operator_op("price_show", price_show, PriceKind, Effect.READ, permission=_CR, doors=_ALL)
PRICE_SET = operator_op("price_set", price_set, PriceOverrides, permission=_CW, doors=_ALL)
PRICE_RESET = operator_op("price_reset", price_reset, PoolKind, permission=_CW, doors=_ALL)
register(IMPORT_FILE, ADD_RANGE, RETIRE, SHOW, SEED_DEMO, EXPIRE)
register(PRODUCT_LIST, PRODUCT_ADD, PRODUCT_SET, PRICE_SHOW, PRICE_SET, PRICE_RESET)
