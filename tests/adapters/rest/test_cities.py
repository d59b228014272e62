"""Issue 36: GET /billing/cities lists where a pool's stock is per city from the geo data (a test .mmdb
located the rows), with the username's option values; taken IPs are not available for static pools."""

from __future__ import annotations

import random
import uuid

import pytest
from sqlalchemy import delete, insert, update

from proxyplane.domains.geo import service as geo
from proxyplane.domains.geo.reader import GeoReader
from proxyplane.storage.models import IpGeo, StockIp
from tests.domains.geo.mmdb import write

pytestmark = pytest.mark.anyio
API = "/api/v1/billing/cities"


async def test_cities_of_a_pool(client, platform, tmp_path) -> None:
    tag = uuid.uuid4().hex[:6]
    base = f"127.{random.choice([*range(40, 200), *range(201, 250)])}.{random.randrange(0, 250)}"
    city_a, city_b = f"Alpha {tag}", f"Beta {tag}"
    city, asn = write(tmp_path, [
        (f"{base}.0/29", "DE", "Bavaria", "BY", city_a, 64496, "Example Net"),
        (f"{base}.8/29", "DE", "Saxony", "SN", city_b, 64497, "Other Net"),
    ])
    addresses = [f"{base}.{n}" for n in range(2, 12)]  # 6 in Alpha, 4 in Beta
    try:
        async with platform.db.unit_of_work(write=True) as uow:
            for address in addresses:
                await uow.session.execute(insert(StockIp).values(
                    address=address, product_kind="proxy_personal", country_maxmind="DE", country_ripe="DE",
                    capacity=1, assigned_count=0))
            await uow.session.execute(update(StockIp).where(StockIp.address == addresses[0])
                                      .values(assigned_count=1))  # taken: not available
            await geo.locate(uow.session, addresses, {"maxmind": GeoReader(city, asn)})
            await uow.commit()
        r = await client.get(API, params={"product_kind": "proxy_personal", "country": "de"})
        assert r.status_code == 200, r.text
        mine = {c["city"]: c for c in r.json()["cities"] if c["city"] in (city_a, city_b)}
        assert mine[city_a] == {"country": "DE", "region": "Bavaria", "city": city_a,
                                "region_option": "bavaria", "city_option": f"alpha{tag}", "available_ips": 5}
        assert mine[city_b]["available_ips"] == 4 and mine[city_b]["region_option"] == "saxony"
        other = await client.get(API, params={"product_kind": "proxy_personal", "country": "FR"})
        assert all(c["city"] not in (city_a, city_b) for c in other.json()["cities"])
        unknown = await client.get(API, params={"country": "XX"})  # no stock there: nothing listed
        assert unknown.status_code == 200 and unknown.json()["cities"] == []
        assert (await client.get(API, params={"country": "DEU"})).status_code == 422
        assert (await client.get(API, params={"product_kind": "proxy_mobile"})).status_code == 422
    finally:
        async with platform.db.unit_of_work(write=True) as uow:
            await uow.session.execute(delete(IpGeo).where(IpGeo.address.in_(addresses)))
            await uow.session.execute(delete(StockIp).where(StockIp.address.in_(addresses)))
            await uow.commit()
