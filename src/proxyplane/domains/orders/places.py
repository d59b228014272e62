"""Static IPs bought per region or city (issue 36): a segment's `region`/`city` are matched, as geo keys
(core/place_names.py: the username's -region-/-city- values, what list_cities lists), against the geo data
(ip_geo) of the order's geo source over the pool's free stock of the segment's country. A match becomes
the exact names the allocation filters on (storage/repos/stock.PlaceFilter)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.core.errors import ValidationFailed
from proxyplane.core.place_names import geo_key
from proxyplane.domains.pricing import QuoteLine, Segment
from proxyplane.storage.models.prefixes import IPV6_KIND
from proxyplane.storage.repos import ip_geo
from proxyplane.storage.repos.stock import PlaceFilter

NEARBY = 8  # names of places with stock listed in a refusal
Row = tuple[str | None, str | None, str | None, int]  # region, region code, city, free IPs (or subnets)


@dataclass(frozen=True)
class Placed:
    """One placed segment: what the allocation filters on, the free IPs there, and (for a refusal) the
    places of the same kind (cities, or regions) that have free IPs in the country, most first."""

    filter: PlaceFilter
    available: int
    nearby: tuple[str, ...]


def place_keys(region: str | None, city: str | None, where: str = "") -> tuple[str | None, str | None]:
    """(region, city) as geo keys; a name with no letter or digit is refused (field `segments` when
    `where` names a segment, else the option's own name)."""
    keys: list[str | None] = []
    for field, value in (("region", region), ("city", city)):
        key = geo_key(value) if value is not None else None
        if value is not None and not key:
            message = f"{where}{field} {value!r} names no place"
            raise ValidationFailed(message, field="segments" if where else field)
        keys.append(key)
    return keys[0], keys[1]


def place_segment(country: str, count: int, region: str | None, city: str | None) -> Segment:
    """A segment with its place as geo keys."""
    return Segment(country, count, *place_keys(region, city, f"segment {country}: "))


def segment_record(line: QuoteLine) -> dict[str, object]:
    """A service's segment as stored: country and count, and the place a placed segment names."""
    record: dict[str, object] = {"country": line.country, "count": line.count}
    if line.region is not None:
        record["region"] = line.region
    if line.city is not None:
        record["city"] = line.city
    return record


def stored_segment(record: dict[str, Any]) -> Segment:
    """A service's stored segment back as a Segment (its place kept)."""
    return Segment(record["country"], int(record["count"]), record.get("region"), record.get("city"))


def is_placed(line: QuoteLine | Segment) -> bool:
    return line.region is not None or line.city is not None


def place_text(line: QuoteLine) -> str:
    """`DE`, `DE, city 'munich'`, `US, region 'ca', city 'losangeles'` (messages)."""
    parts = [line.country]
    if line.region is not None:
        parts.append(f"region {line.region!r}")
    if line.city is not None:
        parts.append(f"city {line.city!r}")
    return ", ".join(parts)


def fits(row: Row, region: str | None, city: str | None) -> bool:
    name, code, town, _ = row
    if city is not None and (town is None or geo_key(town) != city):
        return False
    if region is None:
        return True
    return (name is not None and geo_key(name) == region) or (code is not None and code.lower() == region)


async def resolve(
    session: AsyncSession, product_kind: str, geo_source: str, lines: Sequence[QuoteLine]
) -> dict[int, Placed]:
    """Per placed line (by index): its filter and free IPs. A city: a read of that city's rows (ip_geo's
    city_key index); a region, and a refusal's names of what the country has: one grouped read of the
    country's places, per country named."""
    placed = [i for i, line in enumerate(lines) if is_placed(line)]
    if not placed:
        return {}
    if product_kind == IPV6_KIND:
        return await _resolve_subnets(session, geo_source, lines, placed)
    by_country: dict[str, list[Row]] = {}  # every place of a country (a region, or a refusal's names)

    async def country_rows(country: str) -> list[Row]:
        if country not in by_country:
            by_country[country] = await ip_geo.place_counts(session, product_kind, geo_source, country)
        return by_country[country]

    out: dict[int, Placed] = {}
    for i in placed:
        line = lines[i]
        if line.city is not None:  # the city's rows only (ip_geo's city_key index)
            rows = await ip_geo.place_counts(session, product_kind, geo_source, line.country, line.city)
        else:
            rows = await country_rows(line.country)
        hits = [r for r in rows if fits(r, line.region, line.city)]
        regions = tuple(sorted({r[0] for r in hits if r[0]})) if line.region is not None else None
        cities = tuple(sorted({r[2] for r in hits if r[2]})) if line.city is not None else None
        place = PlaceFilter(geo_source, regions, cities)
        available = sum(r[3] for r in hits)
        nearby = _nearby(await country_rows(line.country), line) if not available else ()
        out[i] = Placed(place, available, nearby)
    return out


async def _resolve_subnets(
    session: AsyncSession, geo_source: str, lines: Sequence[QuoteLine], placed: Sequence[int]
) -> dict[int, Placed]:
    """proxy_ipv6: a subnet lies where its routed prefix does (the prefix's geo row); the filter names the
    prefixes whose place fits, the availability is their free subnets."""
    from proxyplane.domains.stock import subnets  # (stock imports orders' neighbours: no cycle at load)

    out: dict[int, Placed] = {}
    for i in placed:
        line = lines[i]
        prefixes = await ip_geo.prefix_places(session, geo_source, line.country)
        rows: list[Row] = [(r, rc, ci, max(0, subnets.subnet_count(p, n) - held))
                           for _, _, p, n, held, r, rc, ci in prefixes]
        hits = [(pid, row[3]) for (pid, *_), row in zip(prefixes, rows, strict=True)
                if fits(row, line.region, line.city)]
        place = PlaceFilter(geo_source, prefix_ids=tuple(pid for pid, _ in hits))
        out[i] = Placed(place, sum(n for _, n in hits), _nearby([r for r in rows if r[3] > 0], line))
    return out


def _nearby(rows: Sequence[Row], line: QuoteLine) -> tuple[str, ...]:
    """The cities (a city asked) or regions with free IPs in the line's country (in the asked region, for
    a city asked within one), most free IPs first."""
    counts: dict[str, int] = {}
    for row in rows:
        if line.city is not None and line.region is not None and not fits(row, line.region, None):
            continue
        name = row[2] if line.city is not None else row[0]
        if name:
            counts[geo_key(name)] = counts.get(geo_key(name), 0) + row[3]
    return tuple(k for k, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:NEARBY])


def refusal(line: QuoteLine, placed: Placed, product_kind: str, geo_source: str) -> str:
    have = placed.available
    where = place_text(line)
    if have:
        return f"only {have} {product_kind} IPs available in {where} ({geo_source})"
    kind = "cities" if line.city is not None else "regions"
    hint = f"; {kind} with free IPs there: {', '.join(placed.nearby)}" if placed.nearby else ""
    return f"no {product_kind} IPs available in {where} ({geo_source}){hint}"
