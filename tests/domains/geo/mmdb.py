"""Test geo databases written with ``mmdb-writer`` in the GeoIP2-City and GeoLite2-ASN shapes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mmdb_writer import MMDBWriter
from netaddr import IPSet

# (network, country, region, region code, city, asn, org): documentation prefixes (RFC 5737 / 3849) and
# loopback ranges a test's exits can live on
Row = tuple[str, str, str, str, str, int, str]


def city_record(country: str, region: str, code: str, city: str) -> dict[str, Any]:
    return {
        "country": {"iso_code": country, "names": {"en": country}},
        "subdivisions": [{"iso_code": code, "names": {"en": region}}],
        "city": {"names": {"en": city}},
    }


def write(tmp: Path, rows: list[Row]) -> tuple[str, str]:
    """(city file, ASN file) holding ``rows``."""
    city = MMDBWriter(ip_version=6, ipv4_compatible=True, database_type="GeoIP2-City", languages=["en"],
                      description="proxyplane test city")
    asn = MMDBWriter(ip_version=6, ipv4_compatible=True, database_type="GeoLite2-ASN", languages=["en"],
                     description="proxyplane test asn")
    for network, country, region, code, name, number, org in rows:
        city.insert_network(IPSet([network]), city_record(country, region, code, name))
        asn.insert_network(IPSet([network]),
                           {"autonomous_system_number": number, "autonomous_system_organization": org})
    city_path, asn_path = tmp / "city.mmdb", tmp / "asn.mmdb"
    city.to_db_file(str(city_path))
    asn.to_db_file(str(asn_path))
    return str(city_path), str(asn_path)
