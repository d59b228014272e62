"""Filling and correcting the geo data of the stock (issue 36): the geo database's answer per exit IP /
prefix and source (storage/repos/ip_geo.py keeps an operator's override over it), and overrides."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.core.errors import ValidationFailed
from proxyplane.domains.geo.reader import SOURCES, GeoReader, Place
from proxyplane.domains.stock.countries import normalize_country
from proxyplane.storage.repos import ip_geo

IMPORT_LOCATE_MAX = 65_536  # an import locates at most this many IPs itself (more: operator_geo_locate)


def readers(sources: Iterable[str] = SOURCES) -> dict[str, GeoReader]:
    out = {}
    for source in sources:
        reader = GeoReader.for_source(source)
        if reader is not None:
            out[source] = reader
    return out


async def locate(session: AsyncSession, addresses: Sequence[str],
                 found: dict[str, GeoReader] | None = None) -> dict[str, int]:
    """Look ``addresses`` up in each source's database and store the answers; {source: rows stored}."""
    found = readers() if found is None else found
    out: dict[str, int] = {}
    for source, reader in found.items():
        rows = []
        for address in addresses:
            place = reader.lookup(address)
            if place is not None:
                rows.append({"address": address, "geo_source": source, **place.fields()})
        out[source] = await ip_geo.store(session, rows)
    if any(out.values()):
        await _log(session, addresses)
    return out


async def _log(session: AsyncSession, addresses: Sequence[str]) -> None:
    """The gateway re-reads what the places changed: the pools of the IPs, the services holding subnets
    of the prefixes (issue 36: an IPv6 service's subnets lie where their prefix does)."""
    await ip_geo.log_pools(session, await ip_geo.pools_of(session, addresses))
    prefixes = [a for a in addresses if "/" in a]
    if prefixes:
        await ip_geo.log_keys(session, await ip_geo.prefix_services(session, prefixes))


def _check_source(source: str) -> None:
    if source not in SOURCES:
        raise ValidationFailed(f"geo_source must be one of {', '.join(SOURCES)}", field="geo_source")


async def override(session: AsyncSession, address: str, geo_source: str, place: Place) -> dict[str, Any]:
    """The operator's location of ``address``: kept over later lookups; its country becomes the stock
    row's country for that source (quotes, orders and the countries list follow it)."""
    _check_source(geo_source)
    values = place.fields()
    if place.country is not None:
        try:
            values["country"] = normalize_country(place.country)
        except ValueError as exc:
            raise ValidationFailed(str(exc), field="country") from None
        await ip_geo.set_stock_country(session, address, geo_source, values["country"])
    row = await ip_geo.override(session, address, geo_source, values)
    await _log(session, [address])
    return row_json(row)


def row_json(row: Any) -> dict[str, Any]:
    return {"address": row.address, "geo_source": row.geo_source, "country": row.country,
            "region": row.region, "region_code": row.region_code, "city": row.city, "asn": row.asn,
            "org": row.org, "overridden": row.overridden}


async def show(session: AsyncSession, address: str) -> list[dict[str, Any]]:
    return [row_json(r) for r in await ip_geo.for_address(session, address)]
