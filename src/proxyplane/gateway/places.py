"""Region, city and ASN targeting of rotating exits (issue 36).

A rotating pool's ``ExitPool`` carries ``places`` {ip: (region key, region code key, city key, asn)} read
from the store's geo data (storage/repos/ip_geo.pool_places; keys are ``protocol.username.geo_key`` forms,
"" / 0 where unknown). The router narrows a pool to the exits that fit the username's target; when none
does, ``refusal`` names the option that found nothing and lists what exists in the same country (computed
on the failure path only, and the router caches it with the pool)."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from typing import Any

from .protocol.username import UsernameError, geo_key

Target = tuple[str | None, str | None, int | None]  # (region, city, asn) of the username
Place = tuple[str, str, str, int]  # (region key, region code key, city key, asn)
HINTS = 8  # names listed in a refusal


def place_of(keys: dict[str | None, str], region: str | None, code: str | None, city: str | None,
             asn: int | None) -> Place:
    """A stored place as geo keys (``keys``: the caller's cache of names already keyed, interned)."""
    parts = []
    for name in (region, code, city):
        key = keys.get(name)
        if key is None:
            key = keys[name] = sys.intern(geo_key(name or ""))
        parts.append(key)
    return (parts[0], parts[1], parts[2], int(asn or 0))


def places_of(exits: Any) -> Mapping[str, Place]:
    return getattr(exits, "places", None) or {}


def fits(place: Place, target: Target) -> bool:
    region, city, asn = target
    return ((region is None or region in (place[0], place[1])) and (city is None or city == place[2])
            and (asn is None or asn == place[3]))


def matching(exits: Any, candidates: Iterable[str], target: Target) -> list[str]:
    known = places_of(exits)
    return [ip for ip in candidates if (p := known.get(ip)) is not None and fits(p, target)]


def _hint(country: str | None, names: Iterable[str], what: str) -> str:
    listed = sorted(n for n in set(names) if n)
    where = f" in {country.upper()}" if country else ""
    if not listed:
        return f" (no {what} known{where})"
    more = ", ..." if len(listed) > HINTS else ""
    return f" ({what}{where}: {', '.join(listed[:HINTS])}{more})"


class PlaceIndex:
    """What a pool's places hold per country ("" : every country): region names, region codes, cities
    and ASNs; built once per pool version, so a name nothing has is refused in O(1) of the pool."""

    __slots__ = ("by_country",)

    def __init__(self, exits: Any) -> None:
        self.by_country: dict[str, tuple[set[str], set[str], set[str], set[int]]] = {}
        for ip, (region, code, city, asn) in places_of(exits).items():
            for key in (exits.get(ip) or "", ""):
                sets = self.by_country.get(key)
                if sets is None:
                    sets = self.by_country[key] = (set(), set(), set(), set())
                sets[0].add(region)
                sets[1].add(code)
                sets[2].add(city)
                sets[3].add(asn)
        for sets in self.by_country.values():
            for names in sets:
                names.discard("")
                names.discard(0)


_INDEXES: dict[int, tuple[Any, int, PlaceIndex]] = {}


def index(exits: Any) -> PlaceIndex:
    version = getattr(exits, "version", 0)
    cached = _INDEXES.get(id(exits))
    if cached is not None and cached[0] is exits and cached[1] == version:
        return cached[2]
    if len(_INDEXES) > 256:
        _INDEXES.clear()
    built = PlaceIndex(exits)
    _INDEXES[id(exits)] = (exits, version, built)
    return built


def unknown(exits: Any, country: str | None, target: Target) -> str | None:
    """The 407 text when the pool has no exit with the target's region, city or ASN in ``country`` (each
    checked alone, from the index); None when each exists (their combination may still match nothing)."""
    region, city, asn = target
    regions, codes, cities, asns = index(exits).by_country.get(country or "", (set(), set(), set(), set()))
    if region is not None and region not in regions and region not in codes:
        return str(UsernameError("region", f"no exit in '{region}'" + _hint(country, regions, "regions")))
    if city is not None and city not in cities:
        return str(UsernameError("city", f"no exit in '{city}'" + _hint(country, cities, "cities")))
    if asn is not None and asn not in asns:
        return str(UsernameError("asn", f"no exit in AS{asn}" + _hint(country, map(str, asns), "ASNs")))
    return None


def refusal(exits: Any, country: str | None, target: Target) -> str:
    """The 407 text when no exit fits ``target``: the option that found nothing and what exists."""
    alone = unknown(exits, country, target)
    if alone is not None:
        return alone
    known = places_of(exits)
    scope = [p for ip, p in known.items() if country is None or exits.get(ip) == country]
    region, city, asn = target
    if region is not None:
        scope = [p for p in scope if region in (p[0], p[1])]
        if city is not None and not any(city == p[2] for p in scope):
            names = (p[2] for p in scope)
            return str(UsernameError("city", f"no exit in '{city}' in region '{region}'"
                                     + _hint(country, names, "cities")))
    if city is not None:
        scope = [p for p in scope if city == p[2]]
    shown = (str(p[3]) for p in scope if p[3])
    return str(UsernameError("asn", f"no exit in AS{asn} there" + _hint(country, shown, "ASNs")))
