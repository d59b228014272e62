"""`proxyplane admin stock|product|price ...`: the operator's stock, catalog products and price books."""

from __future__ import annotations

import json
import sys
import uuid
from collections.abc import Iterable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import click
from sqlalchemy import select

from proxyplane.cli.admin import admin
from proxyplane.cli.common import admin_call, echo_json, fail
from proxyplane.domains.pricing import pricing_info
from proxyplane.domains.pricing.store import load_pricebooks, reset_overrides, set_overrides
from proxyplane.domains.services.service import expire_due
from proxyplane.domains.stock import bulk
from proxyplane.domains.stock import service as stock
from proxyplane.domains.stock.seed import seed_demo
from proxyplane.storage.models import CatalogProduct

POOLS = click.Choice(["proxy_datacenter", "proxy_isp", "proxy_personal"])


@admin.group("stock")
def stock_group() -> None:
    """Exit-IP pools: import, add a range, retire, summary, demo seed."""


def run_import(
    pool: str, rows: Iterable[bulk.Row], total: int, capacity: int | None, port: int | None
) -> None:
    """Import rows in one transaction; a progress bar on stderr when it is a terminal."""

    async def go(session: Any, _: Any) -> Any:
        with ExitStack() as stack:
            progress = None
            if sys.stderr.isatty() and total >= bulk.CHUNK:
                bar = stack.enter_context(click.progressbar(length=total, label="importing", file=sys.stderr))
                progress = bar.update
            result = await bulk.import_rows(
                session, pool, rows, capacity=capacity, port=port, progress=progress
            )
        return {"added": result.added, "skipped": result.skipped}

    echo_json(admin_call(go))


@stock_group.command("import")
@click.option("--pool", type=POOLS, required=True)
@click.option("--file", "path", type=click.Path(exists=True, dir_okay=False), required=True)
@click.option("--capacity", type=int, default=None, help="services per IP (dedicated: always 1)")
@click.option("--port", type=int, default=None)
def stock_import(pool: str, path: str, capacity: int | None, port: int | None) -> None:
    """Import IPs from a file: one `IP MAXMIND_COUNTRY [RIPE_COUNTRY]` per line (# comments)."""
    lines = Path(path).read_text().splitlines()
    try:
        rows = list(bulk.file_rows(lines))  # every line checked before anything is written
    except ValueError as exc:
        fail(str(exc))
    run_import(pool, rows, len(rows), capacity, port)


@stock_group.command("add-range")
@click.option("--pool", type=POOLS, required=True)
@click.option("--range", "spec", required=True, help="CIDR (127.0.5.0/24) or FIRST-LAST")
@click.option("--country", required=True, help="country per MaxMind")
@click.option("--ripe-country", default=None, help="country per RIPE (default: the same)")
@click.option("--capacity", type=int, default=None)
@click.option("--port", type=int, default=None)
def stock_add_range(
    pool: str, spec: str, country: str, ripe_country: str | None, capacity: int | None, port: int | None
) -> None:
    """Add every address of a range to a pool."""
    try:
        first, last = bulk.range_bounds(spec)
        rows = bulk.range_rows(first, last, country, ripe_country or country)
    except ValueError as exc:
        fail(str(exc))
    run_import(pool, rows, last - first + 1, capacity, port)


@stock_group.command("retire")
@click.argument("addresses", nargs=-1)
@click.option("--range", "spec", default=None, help="retire a whole range")
def stock_retire(addresses: tuple[str, ...], spec: str | None) -> None:
    """Stop selling IPs (services holding them keep them until they end)."""
    wanted = list(addresses) + (stock.expand_range(spec) if spec else [])
    if not wanted:
        fail("give addresses or --range")

    async def go(session: Any, _: Any) -> Any:
        retired = 0
        for i in range(0, len(wanted), 10_000):  # bound parameters per statement (SQLite: 32,766)
            retired += await stock.retire_ips(session, wanted[i : i + 10_000])
        return {"retired": retired}

    echo_json(admin_call(go))


@stock_group.command("show")
@click.option("--pool", type=POOLS, default=None)
@click.option("--geo-source", type=click.Choice(["maxmind", "ripe"]), default="maxmind")
def stock_show(pool: str | None, geo_source: str) -> None:
    """Pools (IPs, slots, assigned) and, with --pool, available IPs per country."""

    async def go(session: Any, _: Any) -> Any:
        out: dict[str, Any] = {"pools": await stock.pool_summary(session)}
        if pool:
            avail = await stock.availability(session, pool, geo_source)
            out["available"] = dict(sorted(avail.items(), key=lambda kv: (-kv[1], kv[0])))
        return out

    echo_json(admin_call(go))


@stock_group.command("seed-demo")
def stock_seed_demo() -> None:
    """Add the demo loopback stock and catalog products (idempotent)."""

    async def go(session: Any, _: Any) -> Any:
        return await seed_demo(session)

    echo_json(admin_call(go))


@stock_group.command("expire")
def stock_expire() -> None:
    """Mark services past their term as expired and free their IPs."""

    async def go(session: Any, _: Any) -> Any:
        return {"expired": [str(s) for s in await expire_due(session)]}

    echo_json(admin_call(go))


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


@admin.group("product")
def product_group() -> None:
    """Catalog products."""


@product_group.command("list")
def product_list() -> None:
    async def go(session: Any, _: Any) -> Any:
        rows = (await session.execute(select(CatalogProduct).order_by(CatalogProduct.sort_order))).scalars()
        return [product_json(p) for p in rows]

    echo_json(admin_call(go))


@product_group.command("add")
@click.option("--name", required=True)
@click.option("--kind", type=click.Choice([*POOLS.choices, "proxy_rotating"]), required=True)
@click.option("--price-cents", type=int, required=True)
@click.option("--period-months", type=click.Choice(["1", "3", "6", "12"]), default="1")
@click.option("--description", default="")
@click.option("--config", "config_json", default="{}", help='JSON, e.g. {"ip_count": 5, "country": "US"}')
@click.option("--schema", "schema_json", default='{"type": "object", "properties": {}}')
@click.option("--max-connections", type=int, default=100)
def product_add(
    name: str,
    kind: str,
    price_cents: int,
    period_months: str,
    description: str,
    config_json: str,
    schema_json: str,
    max_connections: int,
) -> None:
    """Add a catalog product."""
    try:
        config, schema = json.loads(config_json), json.loads(schema_json)
    except json.JSONDecodeError as exc:
        fail(f"invalid JSON: {exc}")
    if price_cents < 0:
        fail("price must not be negative")

    async def go(session: Any, _: Any) -> Any:
        p = CatalogProduct(
            name=name,
            kind=kind,
            price_cents=price_cents,
            period_months=int(period_months),
            description=description,
            config=config,
            parameters_schema=schema,
            max_connections=max_connections,
        )
        session.add(p)
        await session.flush()
        return product_json(p)

    echo_json(admin_call(go))


@product_group.command("set")
@click.argument("product_id", type=click.UUID)
@click.option("--price-cents", type=int, default=None)
@click.option("--active/--inactive", default=None)
def product_set(product_id: uuid.UUID, price_cents: int | None, active: bool | None) -> None:
    """Change a product's price or (de)activate it."""

    async def go(session: Any, _: Any) -> Any:
        p = await session.get(CatalogProduct, product_id)
        if p is None:
            raise ValueError(f"product {product_id} not found")
        if price_cents is not None:
            p.price_cents = price_cents
        if active is not None:
            p.active = active
        await session.flush()
        return product_json(p)

    echo_json(admin_call(go))


@admin.group("price")
def price_group() -> None:
    """Price books (defaults + operator overrides)."""


@price_group.command("show")
@click.option("--kind", type=POOLS, default=None)
def price_show(kind: str | None) -> None:
    async def go(session: Any, _: Any) -> Any:
        books = await load_pricebooks(session)
        return {k: pricing_info(b) for k, b in books.items() if kind in (None, k)}

    echo_json(admin_call(go))


@price_group.command("set")
@click.option("--kind", type=POOLS, required=True)
@click.option("--json", "overrides_json", required=True, help='e.g. {"base_price_cents": 20}')
def price_set(kind: str, overrides_json: str) -> None:
    """Override top-level keys of a price book (validated; lists replaced whole)."""
    try:
        overrides = json.loads(overrides_json)
    except json.JSONDecodeError as exc:
        fail(f"invalid JSON: {exc}")
    if not isinstance(overrides, dict):
        fail("overrides must be a JSON object")

    async def go(session: Any, _: Any) -> Any:
        return pricing_info(await set_overrides(session, kind, overrides))

    echo_json(admin_call(go))


@price_group.command("reset")
@click.option("--kind", type=POOLS, required=True)
def price_reset(kind: str) -> None:
    """Back to the shipped defaults for a kind."""

    async def go(session: Any, _: Any) -> Any:
        await reset_overrides(session, kind)
        return {"reset": kind}

    echo_json(admin_call(go))
