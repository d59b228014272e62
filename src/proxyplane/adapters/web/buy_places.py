"""The buy page's regions and cities (issue 36): a count field per place, `p_<CC>_<region>_<city>` (the
geo keys list_cities gives as region_option/city_option; either may be empty, not both), and the rows of
one country's places from list_cities: each region (anywhere in it) followed by its cities."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

PLACE_FIELD = re.compile(r"^p_([A-Z]{2})_([a-z0-9]*)_([a-z0-9]*)$")


def place_field(country: str, region: str | None, city: str | None) -> str:
    return f"p_{country}_{region or ''}_{city or ''}"


def placed_segments(values: dict[str, Any]) -> list[dict[str, Any]]:
    """The placed segments the form's p_ fields ask for (a positive count each)."""
    out: list[dict[str, Any]] = []
    for key, raw in values.items():
        match = PLACE_FIELD.match(key)
        if not match or not (match.group(2) or match.group(3)) or not str(raw).strip():
            continue
        try:
            count = int(str(raw))
        except ValueError:
            continue
        if count > 0:
            segment: dict[str, Any] = {"country": match.group(1), "count": count}
            if match.group(2):
                segment["region"] = match.group(2)
            if match.group(3):
                segment["city"] = match.group(3)
            out.append(segment)
    return out


@dataclass(frozen=True)
class PlaceRow:
    field: str
    label: str  # a region's or city's name as the geo data spells it
    region: str | None  # a city's region name (muted beside it); None on a region's own row
    available: int  # a region's: the sum of its listed cities
    is_region: bool


def place_rows(country: str, cities: list[Any]) -> list[PlaceRow]:
    """One country's places from list_cities' rows: per region (most available first) a row for anywhere
    in it, then its cities; cities the geo data gives no region last."""
    regions: dict[str, tuple[str, list[Any]]] = {}
    loose: list[Any] = []
    for c in cities:
        if c.country != country:
            continue
        if c.region_option:
            regions.setdefault(c.region_option, (c.region or c.region_option, []))[1].append(c)
        else:
            loose.append(c)
    rows: list[PlaceRow] = []
    totals = {key: sum(c.available_ips for c in members) for key, (_, members) in regions.items()}
    for key in sorted(regions, key=lambda k: (-totals[k], k)):
        name, members = regions[key]
        rows.append(PlaceRow(place_field(country, key, None), name, None, totals[key], True))
        rows += [PlaceRow(place_field(country, key, c.city_option), c.city, name, c.available_ips, False)
                 for c in members]
    rows += [PlaceRow(place_field(country, None, c.city_option), c.city, None, c.available_ips, False)
             for c in loose]
    return rows
