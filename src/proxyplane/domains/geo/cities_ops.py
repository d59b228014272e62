"""Operation list_cities (issue 36): where the stock of a pool is, per city, from the geo data: the values
the username's -region-/-city- options take and a static order's place. proxy_ipv6: the free /64s of the
routed prefixes the geo data places in each city (a subnet lies where its prefix does)."""

from __future__ import annotations

from pydantic import BaseModel, Field

from proxyplane.core.bounds import documented
from proxyplane.core.errors import ValidationFailed
from proxyplane.core.place_names import geo_key
from proxyplane.domains.stock import service as stock
from proxyplane.domains.stock import subnets
from proxyplane.domains.stock.service import SOLD_KINDS
from proxyplane.ops import Auth, Context, Operation, register
from proxyplane.storage.models.prefixes import IPV6_KIND
from proxyplane.storage.models.stock import GEO_SOURCES
from proxyplane.storage.repos import ip_geo

LIMIT = 1000  # cities listed at most (most available first)
POOLS = [*SOLD_KINDS, "proxy_rotating"]
Row = tuple[str, str | None, str | None, int]  # stock country, region, city, free IPs (or subnets)


class CitiesQuery(BaseModel):
    product_kind: str = Field(
        default="proxy_datacenter",
        description="proxy_datacenter, proxy_isp, proxy_personal (free IPs), proxy_ipv6 (free /64 subnets "
        "of the prefixes placed there), or proxy_rotating (the rotating services' pool, proxy_datacenter "
        "stock: every live IP)",
        json_schema_extra=documented(enum=POOLS),
    )
    geo_source: str = Field(default="maxmind", description="maxmind or ripe",
                            json_schema_extra=documented(enum=list(GEO_SOURCES)))
    country: str | None = Field(default=None, description="ISO 3166-1 alpha-2; absent: every country",
                                pattern="^[A-Za-z]{2}$")


class CityOut(BaseModel):
    country: str = Field(description="ISO 3166-1 alpha-2, as the stock sells it")
    region: str | None
    city: str
    region_option: str | None = Field(description="the username's -region- value for it")
    city_option: str = Field(description="the username's -city- value for it")
    available_ips: int = Field(description="free IPs; proxy_ipv6: free /64 subnets")


class CitiesOut(BaseModel):
    product_kind: str
    geo_source: str
    cities: list[CityOut] = Field(description="most available first; at most 1000")


async def list_cities(ctx: Context, q: CitiesQuery) -> CitiesOut:
    if q.product_kind not in POOLS:
        raise ValidationFailed(f"product_kind must be one of {', '.join(POOLS)}", field="product_kind")
    rotating = q.product_kind == "proxy_rotating"
    pool = "proxy_datacenter" if rotating else q.product_kind
    stock.check_pool(pool, q.geo_source)
    country = q.country.upper() if q.country is not None else None  # a code no stock has: no cities
    if pool == IPV6_KIND:
        rows = await _subnet_counts(ctx, q.geo_source, country)
    else:
        rows = await ip_geo.city_counts(ctx.session, pool, q.geo_source, country, free_only=not rotating)
    rows.sort(key=lambda r: (-r[3], r[0], r[2] or ""))
    return CitiesOut(
        product_kind=q.product_kind,
        geo_source=q.geo_source,
        cities=[
            CityOut(country=c, region=r, city=city, region_option=geo_key(r) if r else None,
                    city_option=geo_key(city), available_ips=n)
            for c, r, city, n in rows[:LIMIT] if city
        ],
    )


async def _subnet_counts(ctx: Context, geo_source: str, country: str | None) -> list[Row]:
    """Per (stock country, region, city): the free subnets of the live prefixes placed there."""
    counts: dict[tuple[str, str | None, str], int] = {}
    for _, code, prefix, subnet_len, held, region, _, city in await ip_geo.prefix_places(
        ctx.session, geo_source, country
    ):
        free = subnets.subnet_count(prefix, subnet_len) - held
        if city and free > 0:
            counts[(code, region, city)] = counts.get((code, region, city), 0) + free
    return [(c, r, city, n) for (c, r, city), n in counts.items()]


register(
    Operation(
        name="list_cities",
        summary="Cities in stock for a product kind and geo source (from the geo data), most available IPs "
        "first, with the username's -region-/-city- values.",
        method="GET",
        path="/billing/cities",
        handler=list_cities,
        input=CitiesQuery,
        output=CitiesOut,
        auth=Auth.NONE,
        tags=("billing",),
    )
)
