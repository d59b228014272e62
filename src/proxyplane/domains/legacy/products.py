"""The legacy product list: the composite kinds (ids 1-3 and 5 = IPv6, each "the smallest order the price
book accepts, in the country with the most stock, 1 month"; IPv6 counts subnets) and the catalog products
(ids 101...). Prices are the caller's (partner discount applied) and equal what POST /api/product/{pid}
charges."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.domains.catalog import service as catalog
from proxyplane.domains.legacy.service import COMPOSITE_PRODUCTS, catalog_numbers
from proxyplane.domains.pricing import merge_segments, order_minimum_error, quote_lines
from proxyplane.domains.pricing.store import load_pricebook
from proxyplane.domains.stock import service as stock
from proxyplane.storage.models import CatalogProduct, StockIp
from proxyplane.storage.models.prefixes import IPV6_KIND, StockPrefix

GROUPS: dict[str, tuple[int, str]] = {
    "proxy_datacenter": (1, "Datacenter proxies"),
    "proxy_isp": (2, "ISP proxies"),
    "proxy_personal": (3, "Dedicated proxies"),
    "proxy_rotating": (4, "Rotating proxies"),
    "proxy_ipv6": (5, "IPv6 proxies"),
}
MAX_COMPOSITE_IPS = 1000


@dataclass(frozen=True)
class LegacyProduct:
    number: int
    name: str
    kind: str
    price_cents: int
    created_at: datetime
    hidden: bool
    ip_count: int  # 0 for rotating
    update_time: datetime | None  # last stock change of the pool (fpr)
    geo: tuple[str, ...]  # countries it can be bought in (fpr)
    catalog: CatalogProduct | None = None
    country: str = ""  # composite: where POST buys

    @property
    def rotating(self) -> bool:
        return self.kind == "proxy_rotating"


async def _pool_times(session: AsyncSession, kind: str) -> tuple[datetime | None, datetime | None]:
    """When the pool's stock was first and last added (IPv6: its prefixes)."""
    if kind == IPV6_KIND:
        made = StockPrefix.created_at
        q = select(func.min(made), func.max(made)).where(StockPrefix.product_kind == kind)
    else:
        q = select(func.min(StockIp.created_at), func.max(StockIp.created_at)).where(
            StockIp.product_kind == kind
        )
    row = (await session.execute(q)).one()
    return row[0], row[1]


def units(kind: str, count: int) -> str:
    """A count with its noun: 1 IP, 8 IPs; an IPv6 product counts subnets (1 subnet, 2 subnets)."""
    noun = "subnet" if kind == IPV6_KIND else "IP"
    return f"{count} {noun}{'s' if count != 1 else ''}"


async def smallest_order(session: AsyncSession, kind: str, partner: int) -> tuple[int, str, int] | None:
    """(ip_count, country, price_cents) of the smallest acceptable 1-month order in the country with the
    most stock; None when the pool has nothing to sell."""
    avail = await stock.availability(session, kind, "maxmind")
    if not avail or max(avail.values()) < 1:
        return None
    country = sorted(avail.items(), key=lambda cn: (-cn[1], cn[0]))[0][0]
    book = await load_pricebook(session, kind)
    count = max(1, book.min_order_ips)
    while count <= min(avail[country], MAX_COMPOSITE_IPS):
        quote = quote_lines(book, merge_segments([(country, count)]), 1, partner)
        if order_minimum_error(book, quote) is None:
            return count, country, quote.total_cents
        count += 1
    return None


async def _composite(session: AsyncSession, number: int, partner: int) -> LegacyProduct | None:
    kind = COMPOSITE_PRODUCTS[number]
    first, last = await _pool_times(session, kind)
    if first is None:
        return None
    offer = await smallest_order(session, kind, partner)
    avail = await stock.availability(session, kind, "maxmind")
    count, country, price = offer if offer else (1, "", 0)
    return LegacyProduct(
        number=number,
        name=f"{GROUPS[kind][1]}: {units(kind, count)}, 1 month",
        kind=kind,
        price_cents=price,
        created_at=first,
        hidden=offer is None,
        ip_count=count,
        update_time=last,
        geo=tuple(sorted(c for c, n in avail.items() if n > 0)),
        country=country,
    )


async def _from_catalog(session: AsyncSession, number: int, p: CatalogProduct, partner: int) -> LegacyProduct:
    config = dict(p.config or {})
    rotating = p.kind == "proxy_rotating"
    geo: tuple[str, ...] = ()
    last: datetime | None = None
    if not rotating:
        avail = await stock.availability(session, p.kind, str(config.get("geo_source", "maxmind")))
        spec = (p.parameters_schema or {}).get("properties", {}).get("country", {})
        fixed = config.get("country")
        candidates = [str(fixed)] if fixed else list(spec.get("enum") or sorted(avail))
        geo = tuple(c for c in candidates if avail.get(c, 0) > 0)
        last = (await _pool_times(session, p.kind))[1] or p.created_at
    return LegacyProduct(
        number=number,
        name=p.name,
        kind=p.kind,
        price_cents=catalog.customer_price(p, partner),
        created_at=p.created_at,
        hidden=not p.active,
        ip_count=0 if rotating else int(config.get("ip_count", 1)),
        update_time=last,
        geo=geo,
        catalog=p,
    )


async def get_product(session: AsyncSession, number: int, partner: int) -> LegacyProduct | None:
    if number in COMPOSITE_PRODUCTS:
        return await _composite(session, number, partner)
    p = (await catalog_numbers(session)).get(number)
    return await _from_catalog(session, number, p, partner) if p is not None else None


async def list_products(session: AsyncSession, partner: int) -> list[LegacyProduct]:
    """Products on sale (not hidden), by id."""
    out = [p for n in COMPOSITE_PRODUCTS if (p := await _composite(session, n, partner)) is not None]
    for number, cp in (await catalog_numbers(session)).items():
        if cp.active:
            out.append(await _from_catalog(session, number, cp, partner))
    return [p for p in out if not p.hidden]
