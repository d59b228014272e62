"""`proxyplane admin stock|product|price ...`: the operator's stock, catalog products and price books;
flags in, JSON out, over the registered operator operations (domains/stock/operator_ops.py, served by the
"cli" door only)."""

from __future__ import annotations

import json
import sys
import uuid
from contextlib import ExitStack
from typing import Any

import click

from proxyplane.cli.admin import admin
from proxyplane.cli.common import echo_json, fail, operator_call
from proxyplane.domains.stock import bulk

POOLS = click.Choice(["proxy_datacenter", "proxy_isp", "proxy_personal"])


@admin.group("stock")
def stock_group() -> None:
    """Exit-IP pools: import, add a range, retire, summary, demo seed."""


class ProgressBar:
    """The import's progress hook: a bar on stderr when it is a terminal and the import is big enough,
    opened at the first chunk (the operation knows the total) and closed with the command."""

    def __init__(self, stack: ExitStack) -> None:
        self.stack = stack
        self.bar: Any = None
        self.off = not sys.stderr.isatty()

    def __call__(self, done: int, total: int) -> None:
        if self.off:
            return
        if self.bar is None:
            if total < bulk.CHUNK:
                self.off = True
                return
            self.bar = self.stack.enter_context(
                click.progressbar(length=total, label="importing", file=sys.stderr)
            )
        self.bar.update(done)


def run_import(operation: str, **fields: Any) -> None:
    """Import rows in one transaction (the operation's); a progress bar on stderr on a terminal."""
    with ExitStack() as stack:
        result = operator_call(operation, progress=ProgressBar(stack), **fields)
    echo_json(result)


@stock_group.command("import")
@click.option("--pool", type=POOLS, required=True)
@click.option("--file", "path", type=click.Path(exists=True, dir_okay=False), required=True)
@click.option("--capacity", type=int, default=None, help="services per IP (dedicated: always 1)")
@click.option("--port", type=int, default=None)
def stock_import(pool: str, path: str, capacity: int | None, port: int | None) -> None:
    """Import IPs from a file: one `IP MAXMIND_COUNTRY [RIPE_COUNTRY]` per line (# comments)."""
    run_import("operator_stock_import", pool=pool, file=path, capacity=capacity, port=port)


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
    run_import(
        "operator_stock_add_range",
        pool=pool,
        range=spec,
        country=country,
        ripe_country=ripe_country,
        capacity=capacity,
        port=port,
    )


@stock_group.command("retire")
@click.argument("addresses", nargs=-1)
@click.option("--range", "spec", default=None, help="retire a whole range")
def stock_retire(addresses: tuple[str, ...], spec: str | None) -> None:
    """Stop selling IPs (services holding them keep them until they end)."""
    if not addresses and not spec:
        fail("give addresses or --range")
    echo_json(operator_call("operator_stock_retire", addresses=list(addresses), range=spec))


@stock_group.command("show")
@click.option("--pool", type=POOLS, default=None)
@click.option("--geo-source", type=click.Choice(["maxmind", "ripe"]), default="maxmind")
def stock_show(pool: str | None, geo_source: str) -> None:
    """Pools (IPs, slots, assigned) and, with --pool, available IPs per country."""
    echo_json(operator_call("operator_stock_show", pool=pool, geo_source=geo_source))


@stock_group.command("add-prefix")
@click.option("--prefix", required=True, help="a routed IPv6 prefix, e.g. 2001:db8::/48")
@click.option("--country", required=True, help="country per MaxMind")
@click.option("--ripe-country", default=None, help="country per RIPE (default: the same)")
@click.option(
    "--subnet-len", type=int, default=64, help="split size: one subnet of this length per unit sold"
)
def stock_add_prefix(prefix: str, country: str, ripe_country: str | None, subnet_len: int) -> None:
    """Add an IPv6 prefix to the proxy_ipv6 pool (sold per subnet, a /64 by default; issue 16)."""
    echo_json(
        operator_call(
            "operator_stock_add_prefix",
            prefix=prefix,
            country=country,
            ripe_country=ripe_country,
            subnet_len=subnet_len,
        )
    )


@stock_group.command("prefixes")
def stock_prefixes() -> None:
    """IPv6 prefixes with their subnets: total, used (live services) and free."""
    echo_json(operator_call("operator_stock_prefixes"))


@stock_group.command("retire-prefix")
@click.argument("prefix")
def stock_retire_prefix(prefix: str) -> None:
    """Stop selling an IPv6 prefix (services holding subnets of it keep them)."""
    echo_json(operator_call("operator_stock_retire_prefix", prefix=prefix))


@stock_group.command("seed-demo")
def stock_seed_demo() -> None:
    """Add the demo loopback stock and catalog products (idempotent)."""
    echo_json(operator_call("operator_stock_seed_demo"))


@stock_group.command("expire")
def stock_expire() -> None:
    """Mark services past their term as expired and free their IPs."""
    echo_json(operator_call("operator_stock_expire"))


@admin.group("product")
def product_group() -> None:
    """Catalog products."""


@product_group.command("list")
def product_list() -> None:
    echo_json(operator_call("operator_product_list"))


@product_group.command("add")
@click.option("--name", required=True)
@click.option("--kind", type=click.Choice([*POOLS.choices, "proxy_ipv6", "proxy_rotating"]), required=True)
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
    product = operator_call(
        "operator_product_add",
        name=name,
        kind=kind,
        price_cents=price_cents,
        period_months=int(period_months),
        description=description,
        config=config,
        parameters_schema=schema,
        max_connections=max_connections,
    )
    echo_json(product)


@product_group.command("set")
@click.argument("product_id", type=click.UUID)
@click.option("--price-cents", type=int, default=None)
@click.option("--active/--inactive", default=None)
@click.option("--quota-gb", type=int, default=None, help="traffic quota per period, in GB (10^9 bytes)")
@click.option("--quota-requests", type=int, default=None, help="request quota per period")
@click.option("--quota-period", type=click.Choice(["term", "month", "none"]), default=None)
@click.option("--gb-price-cents", type=int, default=None, help="price of 1 GB of add_traffic")
def product_set(
    product_id: uuid.UUID,
    price_cents: int | None,
    active: bool | None,
    quota_gb: int | None,
    quota_requests: int | None,
    quota_period: str | None,
    gb_price_cents: int | None,
) -> None:
    """Change a product's price, (de)activate it, or set its metered traffic (quota, period, per-GB rate:
    for the services bought from now on)."""
    echo_json(
        operator_call(
            "operator_product_set",
            product_id=product_id,
            price_cents=price_cents,
            active=active,
            quota_bytes=None if quota_gb is None else quota_gb * 1_000_000_000,
            quota_requests=quota_requests,
            quota_period=quota_period,
            gb_price_cents=gb_price_cents,
        )
    )


@admin.group("price")
def price_group() -> None:
    """Price books (defaults + operator overrides)."""


@price_group.command("show")
@click.option("--kind", type=POOLS, default=None)
def price_show(kind: str | None) -> None:
    echo_json(operator_call("operator_price_show", kind=kind))


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
    echo_json(operator_call("operator_price_set", kind=kind, overrides=overrides))


@price_group.command("reset")
@click.option("--kind", type=POOLS, required=True)
def price_reset(kind: str) -> None:
    """Back to the shipped defaults for a kind."""
    echo_json(operator_call("operator_price_reset", kind=kind))
