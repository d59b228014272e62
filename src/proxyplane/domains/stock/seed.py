"""The embedded demo: a stock on loopback addresses and a few catalog products, so that a new install
can sell (and really use) proxies on one machine. `seed_demo` is idempotent: it adds only what is
missing (IPs by address, products by name)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.core.rotating_gateway import STORED_KEY, without_stored_gateway
from proxyplane.core.units import GB
from proxyplane.domains.stock.service import StockLine, add_ips, expand_range
from proxyplane.storage.models import CatalogProduct
from proxyplane.storage.repos import catalog

# (pool, network, [(maxmind country, ripe country, how many)]); the rest of the block goes to the last
DEMO_STOCK: list[tuple[str, str, list[tuple[str, str, int]]]] = [
    (
        "proxy_datacenter",
        "127.0.1.0/24",
        [
            ("US", "US", 70),
            ("US", "CA", 10),
            ("DE", "DE", 50),
            ("NL", "NL", 35),
            ("NL", "DE", 5),
            ("GB", "GB", 40),
            ("FR", "FR", 44),
        ],
    ),
    (
        "proxy_isp",
        "127.0.2.0/24",
        [("US", "US", 90), ("GB", "GB", 60), ("DE", "DE", 50), ("DE", "AT", 10), ("JP", "JP", 44)],
    ),
    (
        "proxy_personal",
        "127.0.3.0/24",
        [("US", "US", 100), ("DE", "DE", 60), ("GB", "GB", 50), ("SG", "SG", 30), ("SG", "MY", 14)],
    ),
]

# Rotating products carry no gateway address or ports: customers are shown the configured gateway
# (PROXYPLANE_GATEWAY_*, core/rotating_gateway.py). Demo products seeded before stored a copy ("gateway":
# 8080/1080); seed_demo drops it from them.

DEMO_PRODUCTS: list[dict[str, Any]] = [
    {
        "name": "Datacenter starter: 10 IPs",
        "description": "10 shared datacenter IPs in one country of your choice, 1 month.",
        "kind": "proxy_datacenter",
        "price_cents": 130,
        "period_months": 1,
        "max_connections": 500,
        "parameters_schema": {
            "type": "object",
            "properties": {"country": {"type": "string", "enum": ["US", "DE", "NL", "GB", "FR"]}},
            "required": ["country"],
        },
        "config": {"ip_count": 10, "geo_source": "maxmind"},
        "sort_order": 10,
    },
    {
        "name": "ISP pack: 5 US IPs",
        "description": "5 shared ISP IPs in the United States, 1 month.",
        "kind": "proxy_isp",
        "price_cents": 300,
        "period_months": 1,
        "max_connections": 500,
        "parameters_schema": {"type": "object", "properties": {}},
        "config": {"ip_count": 5, "country": "US", "geo_source": "maxmind"},
        "sort_order": 20,
    },
    {
        "name": "Dedicated IP",
        "description": "One dedicated (personal) IPv4 in the United States, 1 month.",
        "kind": "proxy_personal",
        "price_cents": 300,
        "period_months": 1,
        "max_connections": 200,
        "parameters_schema": {"type": "object", "properties": {}},
        "config": {"ip_count": 1, "country": "US", "geo_source": "maxmind"},
        "sort_order": 30,
    },
    {
        "name": "Rotating datacenter: 10 GB",
        "description": "Rotating gateway over the datacenter pool; 10 GB of traffic a month.",
        "kind": "proxy_rotating",
        "price_cents": 500,
        "period_months": 1,
        "max_connections": 100,
        "parameters_schema": {"type": "object", "properties": {}},
        "config": {
            "plan": "bandwidth",
            "quota_bytes": 10 * GB,  # decimal, as sold (core/units.py)
            "exit_pool": "proxy_datacenter",
            "quota_period": "month",  # the calendar month, UTC (issue 32)
            "gb_price_cents": 100,  # add_traffic's rate per GB
        },
        "sort_order": 40,
    },
    {
        "name": "Traffic package: 1 GB",
        "description": "Rotating gateway over the datacenter pool; 1 GB of traffic that never expires.",
        "kind": "proxy_rotating",
        "price_cents": 150,
        "period_months": 1,
        "max_connections": 100,
        "parameters_schema": {"type": "object", "properties": {}},
        "config": {
            "plan": "bandwidth",
            "quota_bytes": 1_000_000_000,  # decimal, as sold
            "quota_period": "none",  # a package: no reset (issue 32)
            "gb_price_cents": 150,
            "exit_pool": "proxy_datacenter",
        },
        "sort_order": 45,
    },
    {
        "name": "Rotating datacenter: pay as you go",
        "description": "Rotating gateway over the datacenter pool; each started GB of traffic is paid from "
        "the wallet (one charge an hour at most).",
        "kind": "proxy_rotating",
        "price_cents": 0,
        "period_months": 1,
        "max_connections": 100,
        "parameters_schema": {"type": "object", "properties": {}},
        "config": {
            "plan": "payg",  # issue 32.4: billed per started unit (domains/quotas/payg.py)
            "gb_price_cents": 200,  # per started GB (10^9 bytes)
            "exit_pool": "proxy_datacenter",
        },
        "sort_order": 46,
    },
    {
        "name": "Rotating ISP: 100k requests",
        "description": "Rotating gateway over the ISP pool; 100,000 requests a month.",
        "kind": "proxy_rotating",
        "price_cents": 400,
        "period_months": 1,
        "max_connections": 100,
        "parameters_schema": {"type": "object", "properties": {}},
        "config": {
            "plan": "requests",
            "quota_requests": 100_000,
            "exit_pool": "proxy_isp",
            "quota_period": "month",
        },
        "sort_order": 50,
    },
]


def demo_stock_lines() -> list[tuple[str, list[StockLine]]]:
    out = []
    for pool, network, plan in DEMO_STOCK:
        hosts = expand_range(network)
        lines: list[StockLine] = []
        i = 0
        for n, (mm, ripe, count) in enumerate(plan):
            take = count if n < len(plan) - 1 else len(hosts) - i
            lines.extend(StockLine(h, mm, ripe) for h in hosts[i : i + take])
            i += take
        out.append((pool, lines))
    return out


async def seed_demo(session: AsyncSession) -> dict[str, int]:
    """Add the demo stock and products that are missing. Returns counts of what was added."""
    added_ips = 0
    for pool, lines in demo_stock_lines():
        added, _ = await add_ips(session, pool, lines, reactivate=False)
        added_ips += added
    demo = {spec["name"]: spec for spec in DEMO_PRODUCTS}
    existing = (await session.execute(select(CatalogProduct).where(CatalogProduct.name.in_(demo)))).scalars()
    names = set()
    for product in existing:
        names.add(product.name)
        if STORED_KEY in (product.config or {}):  # the stale stored gateway of an older seed
            product.config = without_stored_gateway(product.config)
    added_products = await catalog.add_products(session, [s for s in DEMO_PRODUCTS if s["name"] not in names])
    from proxyplane.domains.stock.seed_ipv6 import seed_demo_ipv6  # IPv6 prefixes and products (30.12)

    return {"ips": added_ips, "products": added_products, **await seed_demo_ipv6(session)}
