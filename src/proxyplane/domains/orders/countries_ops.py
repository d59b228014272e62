"""Operation list_countries: the countries in stock for a product kind and geo source, most available
first; with `region` and/or `city` (issue 36) only the free IPs the geo data places there, per country
(the same matching as a placed order's segment: domains/orders/places.py)."""

from __future__ import annotations

from pydantic import BaseModel, Field

from proxyplane.core.bounds import documented
from proxyplane.domains.orders import places
from proxyplane.domains.stock import service as stock
from proxyplane.domains.stock import subnets
from proxyplane.domains.stock.countries import country_name, numeric_id
from proxyplane.domains.stock.service import SOLD_KINDS
from proxyplane.ops import Auth, Context, Operation, register
from proxyplane.storage.models.prefixes import IPV6_KIND
from proxyplane.storage.models.stock import GEO_SOURCES
from proxyplane.storage.repos import ip_geo

GEO_ENUM = documented(enum=list(GEO_SOURCES))
KIND_ENUM = documented(enum=list(SOLD_KINDS))


class CountriesQuery(BaseModel):
    product_kind: str = Field(
        default="proxy_datacenter",
        description="proxy_datacenter, proxy_isp, proxy_personal, proxy_ipv6 (counts: free /64 subnets)",
        json_schema_extra=KIND_ENUM,
    )
    geo_source: str = Field(default="maxmind", description="maxmind or ripe", json_schema_extra=GEO_ENUM)
    region: str | None = Field(
        default=None, min_length=1, max_length=100,
        description="only free IPs the geo data places in this region (name or ISO 3166-2 code without the "
        "country, compared as list_cities' region_option); proxy_ipv6: free subnets of the prefixes there",
    )
    city: str | None = Field(
        default=None, min_length=1, max_length=100,
        description="only free IPs the geo data places in this city (compared as list_cities' "
        "city_option); proxy_ipv6: free subnets of the prefixes there",
    )


class CountryOut(BaseModel):
    code: str = Field(description="ISO 3166-1 alpha-2")
    numeric_id: int = Field(description="ISO 3166-1 numeric")
    name: str
    available_ips: int


class CountriesOut(BaseModel):
    product_kind: str
    geo_source: str
    region: str | None = Field(default=None, description="the region asked, as a geo key")
    city: str | None = Field(default=None, description="the city asked, as a geo key")
    countries: list[CountryOut] = Field(description="sorted by available_ips, most first")


async def _placed(ctx: Context, q: CountriesQuery) -> tuple[dict[str, int], str | None, str | None]:
    region, city = places.place_keys(q.region, q.city)
    counts: dict[str, int] = {}
    if q.product_kind == IPV6_KIND:  # free subnets of the prefixes placed there
        for _, country, prefix, subnet_len, held, name, code, town in await ip_geo.prefix_places(
            ctx.session, q.geo_source, None
        ):
            free = max(0, subnets.subnet_count(prefix, subnet_len) - held)
            if free and places.fits((name, code, town, free), region, city):
                counts[country] = counts.get(country, 0) + free
        return counts, region, city
    for country, name, code, town, n in await ip_geo.country_place_counts(
        ctx.session, q.product_kind, q.geo_source
    ):
        if places.fits((name, code, town, n), region, city):
            counts[country] = counts.get(country, 0) + n
    return counts, region, city


async def list_countries(ctx: Context, q: CountriesQuery) -> CountriesOut:
    stock.check_pool(q.product_kind, q.geo_source)
    region = city = None
    if q.region is not None or q.city is not None:
        avail, region, city = await _placed(ctx, q)
    else:
        avail = await stock.availability(ctx.session, q.product_kind, q.geo_source)
    rows = sorted(((c, n) for c, n in avail.items() if n > 0), key=lambda cn: (-cn[1], cn[0]))
    return CountriesOut(
        product_kind=q.product_kind,
        geo_source=q.geo_source,
        region=region,
        city=city,
        countries=[
            CountryOut(code=c, numeric_id=numeric_id(c), name=country_name(c), available_ips=n)
            for c, n in rows
        ],
    )


COUNTRIES = Operation(
    name="list_countries",
    summary="Countries in stock for a product kind and geo source (optionally within a region or city), "
    "most available IPs first.",
    method="GET",
    path="/billing/countries",
    handler=list_countries,
    input=CountriesQuery,
    output=CountriesOut,
    auth=Auth.NONE,
    tags=("billing",),
)
register(COUNTRIES)
