"""Operator operations on geo data (issue 36): look the stock up in the geo databases, override one
address's location, show what is stored. CLI (`proxyplane admin operator call operator_geo_...`) and the
operator API; never a customer's door."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from proxyplane.core.errors import ValidationFailed
from proxyplane.domains.geo import service as geo
from proxyplane.domains.geo.reader import Place
from proxyplane.ops import Context, Effect, operator_op, register
from proxyplane.storage.repos import ip_geo

Source = Literal["maxmind", "ripe"]


class LocateIn(BaseModel):
    pool: str | None = Field(default=None, description="every live IP of this pool")
    addresses: list[str] = Field(default=[], description="these IPs / prefixes")


class OverrideIn(BaseModel):
    address: str
    geo_source: Source = "maxmind"
    country: str | None = None
    region: str | None = Field(default=None, max_length=100)
    region_code: str | None = Field(default=None, max_length=8)
    city: str | None = Field(default=None, max_length=100)
    asn: int | None = Field(default=None, ge=1, le=4_294_967_295)
    org: str | None = Field(default=None, max_length=200)


class ShowIn(BaseModel):
    address: str


async def locate(ctx: Context, data: LocateIn) -> dict[str, Any]:
    addresses = list(data.addresses)
    if data.pool:
        addresses += await ip_geo.pool_addresses(ctx.session, data.pool)
    if not addresses:
        raise ValidationFailed("name a pool with stock or some addresses", field="pool")
    found = geo.readers()
    if not found:
        raise ValidationFailed("no geo database configured (PROXYPLANE_GEO_MAXMIND_CITY, ...)", field="pool")
    return {"looked_up": len(addresses), "stored": await geo.locate(ctx.session, addresses, found)}


async def override(ctx: Context, data: OverrideIn) -> dict[str, Any]:
    place = Place(data.country, data.region, data.region_code, data.city, data.asn, data.org)
    return await geo.override(ctx.session, data.address, data.geo_source, place)


async def show(ctx: Context, data: ShowIn) -> dict[str, Any]:
    return {"address": data.address, "places": await geo.show(ctx.session, data.address)}


LOCATE = operator_op("geo_locate", locate, LocateIn, permission="stock.write")
OVERRIDE = operator_op("geo_override", override, OverrideIn, permission="stock.write")
SHOW = operator_op("geo_show", show, ShowIn, Effect.READ, permission="stock.read")  # CLI + operator API
register(LOCATE, OVERRIDE, SHOW)
