"""CPU cost of issue 36's targeting (run: PYTHONPATH=src .venv/bin/python bench/geo_targeting.py).

- parse_username for a plain login, a country target and a full city/asn/session/ttl/strict target;
- Router.choose over a 100,000-exit pool (10 countries x 50 cities x 2 ASNs): country only vs city vs
  city+asn (cached pools: the steady state), and the first choice of a new target (the pool narrowed);
- GeoReader.lookup per IP: a test .mmdb (mmdb-writer) and, when installed, the packaged DB-IP City Lite.
CPU time (process_time), not wall clock."""

from __future__ import annotations

import random
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from proxyplane.domains.geo.reader import GeoReader, packaged_city_db
from proxyplane.gateway.access import Grant, ServiceEntry
from proxyplane.gateway.protocol.username import parse_username
from proxyplane.gateway.routing import Router
from proxyplane.gateway.store_load import ExitPool


def cpu_us(fn: Callable[[], object], n: int) -> float:
    start = time.process_time()
    for _ in range(n):
        fn()
    return (time.process_time() - start) / n * 1e6


def pool(size: int = 100_000) -> ExitPool:
    countries = ["de", "us", "fr", "gb", "nl", "it", "es", "pl", "se", "jp"]
    exits, places = {}, {}
    for i in range(size):
        ip = f"10.{i >> 16 & 255}.{i >> 8 & 255}.{i & 255}"
        country = countries[i % 10]
        exits[ip] = country
        places[ip] = (f"region{i // 10 % 5}", f"r{i // 10 % 5}", f"city{i // 10 % 50}", 64496 + i // 500 % 2)
    return ExitPool(exits, located=places)


def main() -> None:
    full = "alice-country-de-city-city7-asn-64496-session-s1-ttl-24h-strict-1"
    for name in ("alice", "alice-country-de", full):
        us = cpu_us(lambda name=name: parse_username(name), 50_000)
        print(f"parse_username {name!r}: {us:.2f} us")
    exits = pool()
    entry = ServiceEntry("svc-" + uuid.uuid4().hex[:6], "rotating", "u", "p", exit_ips=exits,
                         session_mode="rotating")  # type: ignore[arg-type]
    router = Router(rng=random.Random(1))
    for opts in ("u-country-de", "u-country-de-city-city7", "u-country-de-city-city7-asn-64496"):
        grant = Grant(entry, parse_username(opts))
        first = cpu_us(lambda grant=grant: router.choose(grant, None), 1)
        then = cpu_us(lambda grant=grant: router.choose(grant, None), 50_000)
        print(f"choose {opts}: first {first:.0f} us, then {then:.2f} us")
    bad = Grant(entry, parse_username("u-country-de-city-atlantis"))

    def refused() -> None:
        try:
            router.choose(bad, None)
        except Exception:
            pass

    print(f"choose unknown city (cached refusal): {cpu_us(refused, 20_000):.2f} us")
    names = iter([Grant(entry, parse_username(f"u-country-de-city-x{n}")) for n in range(20_000)])

    def fresh() -> None:
        try:
            router.choose(next(names), None)
        except Exception:
            pass

    print(f"choose a new unknown city each time (index, no scan): {cpu_us(fresh, 20_000):.2f} us")
    with tempfile.TemporaryDirectory() as tmp:
        from tests.domains.geo.mmdb import write

        rows = [(f"10.{a}.{b}.0/24", "DE", "Bavaria", "BY", f"City {a}-{b}", 64496, "Net")
                for a in range(4) for b in range(256)]
        reader = GeoReader(*write(Path(tmp), rows))
        rnd = random.randrange
        it = iter([f"10.{rnd(4)}.{rnd(256)}.{rnd(256)}" for _ in range(20_000)])
        us = cpu_us(lambda: reader.lookup(next(it)), 20_000)
        print(f"lookup (test mmdb, city+asn, 1024 networks): {us:.1f} us")
    path = packaged_city_db()
    if path is not None:
        packaged = GeoReader(path, None)
        rnd = random.randrange
        it2 = iter([f"{rnd(1, 223)}.{rnd(256)}.{rnd(256)}.1" for _ in range(20_000)])
        us = cpu_us(lambda: packaged.lookup(next(it2)), 20_000)
        print(f"lookup (packaged DB-IP City Lite): {us:.1f} us")


if __name__ == "__main__":
    main()
