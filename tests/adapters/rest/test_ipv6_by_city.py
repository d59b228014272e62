"""Issue 36: proxy_ipv6 subnets quoted and bought per city or region: a subnet lies where its routed
prefix does (the prefix's geo row, here the operator's override), the quote counts the free subnets of the
prefixes placed there, the order takes subnets of those prefixes only, a place with none is refused
naming the cities that have some."""

from __future__ import annotations

import ipaddress
import random
import uuid

import httpx
import pytest
from sqlalchemy import delete, update

from proxyplane.core.clock import utcnow
from proxyplane.domains.stock import subnets as stock_subnets
from proxyplane.platform import Platform
from proxyplane.storage.models import IpGeo
from proxyplane.storage.models.prefixes import StockPrefix
from tests.domains.operators.helpers import run
from tests.support import Account, bearer

pytestmark = pytest.mark.anyio
QUOTE = "/api/v1/billing/composite/quote"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def prefix(platform: Platform) -> str:
    """A fresh /56 of the documentation range on sale in IS (256 /64s each)."""
    async with platform.db.unit_of_work() as uow:
        while True:
            try:
                cidr = f"2001:db8:{random.randrange(1, 0xFFFF):x}:{random.randrange(0, 256):x}00::/56"
                row, added = await stock_subnets.add_prefix(uow.session, cidr, "IS", "IS", 64)
            except ValueError:  # overlaps one on sale: draw again
                continue
            if added:
                break
        await uow.commit()
    return str(row.prefix)


def body(segments: list[dict[str, object]]) -> dict[str, object]:
    return {"product_kind": "proxy_ipv6", "period_months": 1, "segments": segments, "geo_source": "maxmind"}


async def test_ipv6_subnets_per_city(client: httpx.AsyncClient, platform: Platform, account: Account) -> None:
    tag = uuid.uuid4().hex[:6]
    north, south = await prefix(platform), await prefix(platform)
    try:
        await run(platform, "operator_geo_override", address=north, region=f"North {tag}",
                  city=f"Akureyri {tag}")
        await run(platform, "operator_geo_override", address=south, region=f"Capital {tag}",
                  city=f"Reykjavik {tag}")
        q = await client.post(QUOTE, json=body([{"country": "IS", "count": 2, "city": f"akureyri{tag}"},
                                                {"country": "IS", "count": 1, "region": f"capital-{tag}"}]))
        assert q.status_code == 200, q.text
        out = q.json()
        assert [s["available_ips"] for s in out["segments"]] == [256, 256] and out["errors"] == []
        nowhere = body([{"country": "IS", "count": 1, "city": "Atlantis"}])
        bad = (await client.post(QUOTE, json=nowhere)).json()
        assert bad["errors"][0]["available"] == 0 and f"akureyri{tag}" in bad["errors"][0]["message"]

        listed = await client.get("/api/v1/billing/countries",
                                  params={"product_kind": "proxy_ipv6", "region": f"north {tag}"})
        assert [(c["code"], c["available_ips"]) for c in listed.json()["countries"]] == [("IS", 256)]

        key = await account.key()
        await account.credit(100_000)
        order = {**body([{"country": "IS", "count": 2, "city": f"Akureyri {tag}"},
                         {"country": "IS", "count": 1, "region": f"Capital {tag}"}]),
                 "whitelist_ips": ["127.0.0.9"], "use_balance": True, "idempotency_key": uuid.uuid4().hex}
        r = await client.post("/api/v1/billing/composite/order", json=order, headers=bearer(key))
        assert r.status_code == 201, r.text
        got = [ipaddress.IPv6Network(i["ip"]) for i in r.json()["service"]["ips"]]
        assert len(got) == 3
        assert sum(n.subnet_of(ipaddress.IPv6Network(north)) for n in got) == 2
        assert sum(n.subnet_of(ipaddress.IPv6Network(south)) for n in got) == 1
        one = body([{"country": "IS", "count": 1, "city": f"akureyri{tag}"}])
        again = await client.post(QUOTE, json=one)
        assert again.json()["segments"][0]["available_ips"] == 254
    finally:
        async with platform.db.unit_of_work() as uow:
            await uow.session.execute(delete(IpGeo).where(IpGeo.address.in_([north, south])))
            await uow.session.execute(update(StockPrefix).where(StockPrefix.prefix.in_([north, south]))
                                      .values(retired_at=utcnow()))
            await uow.commit()


async def test_cities_of_ipv6_prefixes(
    client: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    """list_cities for proxy_ipv6: per city the free /64s of the live prefixes placed there (two prefixes in
    one city add up; a sold subnet is not free; a prefix with no city is not listed)."""
    tag = uuid.uuid4().hex[:6]
    north, north2, south, bare = [await prefix(platform) for _ in range(4)]
    cities = "/api/v1/billing/cities"
    try:
        for where in (north, north2):
            await run(platform, "operator_geo_override", address=where, region=f"North {tag}",
                      city=f"Akureyri {tag}")
        await run(platform, "operator_geo_override", address=south, city=f"Reykjavik {tag}")
        await run(platform, "operator_geo_override", address=bare, region=f"East {tag}")

        async def mine(**params: str) -> dict[str, dict[str, object]]:
            r = await client.get(cities, params={"product_kind": "proxy_ipv6", **params})
            assert r.status_code == 200, r.text
            return {c["city_option"]: c for c in r.json()["cities"] if c["city_option"].endswith(tag)}

        listed = await mine(country="is")
        assert listed == {
            f"akureyri{tag}": {"country": "IS", "region": f"North {tag}", "city": f"Akureyri {tag}",
                               "region_option": f"north{tag}", "city_option": f"akureyri{tag}",
                               "available_ips": 512},
            f"reykjavik{tag}": {"country": "IS", "region": None, "city": f"Reykjavik {tag}",
                                "region_option": None, "city_option": f"reykjavik{tag}",
                                "available_ips": 256},
        }
        assert await mine(country="DE") == {}
        assert set(await mine()) == set(listed)  # every country

        key = await account.key()
        await account.credit(100_000)
        order = {**body([{"country": "IS", "count": 3, "city": f"reykjavik{tag}"}]),
                 "whitelist_ips": ["127.0.0.9"], "use_balance": True, "idempotency_key": uuid.uuid4().hex}
        r = await client.post("/api/v1/billing/composite/order", json=order, headers=bearer(key))
        assert r.status_code == 201, r.text
        assert (await mine(country="IS"))[f"reykjavik{tag}"]["available_ips"] == 253
    finally:
        async with platform.db.unit_of_work() as uow:
            gone = [north, north2, south, bare]
            await uow.session.execute(delete(IpGeo).where(IpGeo.address.in_(gone)))
            await uow.session.execute(update(StockPrefix).where(StockPrefix.prefix.in_(gone))
                                      .values(retired_at=utcnow()))
            await uow.commit()
