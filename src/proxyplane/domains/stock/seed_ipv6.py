"""The demo's IPv6 (issue 30.12): a routed prefix on sale in two countries and a catalog product that
sells /64s from it, so the demo catalog and the buy page offer proxy_ipv6 like the IPv4 kinds.

The prefixes are in 3fff::/20, the IPv6 documentation range of RFC 9637 (never routed on the Internet, and
apart from 2001:db8::/32 that the tests draw their prefixes from): the demo sells and allocates them; an
operator adds the provider's own prefixes with `proxyplane admin prefix add`."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.domains.stock import subnets
from proxyplane.storage.models import CatalogProduct
from proxyplane.storage.models.prefixes import IPV6_KIND
from proxyplane.storage.repos import catalog

# (prefix, maxmind country, ripe country, subnet length)
DEMO_PREFIXES: list[tuple[str, str, str, int]] = [
    ("3fff:0:6::/48", "DE", "DE", 64),
    ("3fff:0:7::/48", "US", "US", 64),
]

DEMO_IPV6_PRODUCTS: list[dict[str, Any]] = [
    {
        "name": "IPv6 pack: 5 /64 subnets",
        "description": "5 routed IPv6 /64 subnets in Germany or the United States, 1 month.",
        "kind": IPV6_KIND,
        "price_cents": 150,
        "period_months": 1,
        "max_connections": 500,
        "parameters_schema": {
            "type": "object",
            "properties": {"country": {"type": "string", "enum": ["DE", "US"]}},
            "required": ["country"],
        },
        "config": {"ip_count": 5, "geo_source": "maxmind"},
        "sort_order": 40,
    },
]


async def seed_demo_ipv6(session: AsyncSession) -> dict[str, int]:
    """Add the demo prefixes and IPv6 products that are missing; counts of what was added. A prefix that
    overlaps one already on sale (an operator's own) is left out."""
    added_prefixes = 0
    for prefix, mm, ripe, subnet_len in DEMO_PREFIXES:
        try:
            _, added = await subnets.add_prefix(session, prefix, mm, ripe, subnet_len)
        except ValueError:  # overlaps a prefix on sale: the operator's stock stays as it is
            continue
        added_prefixes += int(added)
    names = [spec["name"] for spec in DEMO_IPV6_PRODUCTS]
    have = set(
        (await session.execute(select(CatalogProduct.name).where(CatalogProduct.name.in_(names)))).scalars()
    )
    added_products = await catalog.add_products(
        session, [s for s in DEMO_IPV6_PRODUCTS if s["name"] not in have]
    )
    return {"prefixes": added_prefixes, "ipv6_products": added_products}
