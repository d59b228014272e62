"""Issue 36 (1, 2) end to end on loopback: a rotating service whose pool's exits are located by a test
.mmdb (two cities in one country, a region code, two ASNs); a gateway node serves -region-/-city-/-asn-
from those places, an unknown city or ASN is answered 407 naming it with what the country has (each refusal
in the service's usage errors under `geo`), and an operator override moves an exit into another city on
the running node."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import delete

from proxyplane.domains.geo import service as geo
from proxyplane.domains.geo.reader import GeoReader, Place
from proxyplane.storage.models import IpGeo
from tests.domains.geo.mmdb import write
from tests.support import bearer

from .clients import basic, http_get, socks_connect
from .own_pool import loopback_addresses, own_pool
from .test_store_static import API, buy, eventually, node_settings, running_node

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_city_region_asn_targeting(client, platform, account, origin, tmp_path) -> None:
    svc = await buy(client, platform, account, "Rotating datacenter", parameters={})
    key, sid = svc["key"], svc["service_id"]
    auth = (await client.get(f"{API}/{sid}/proxy/auth?reveal=true", headers=bearer(key))).json()
    login, password = auth["login"], auth["password"]
    six = loopback_addresses(6)
    munich, nuremberg = six[:3], six[3:]
    city, asn = write(tmp_path, [
        *((f"{ip}/32", "DE", "Bavaria", "BY", "Munich", 64496, "Example Net") for ip in munich),
        *((f"{ip}/32", "DE", "Bavaria", "BY", "Nuremberg", 64497, "Other Net") for ip in nuremberg),
    ])
    exits = munich + nuremberg
    url = f"http://127.0.0.1:{origin.port}/"
    try:
        async with own_pool(platform, sid, dict.fromkeys(exits, "DE")):
            async with platform.db.unit_of_work(write=True) as uow:
                stored = await geo.locate(uow.session, exits, {"maxmind": GeoReader(city, asn)})
                await uow.commit()
            assert stored == {"maxmind": 6}
            config = (await client.get(f"{API}/{sid}/proxy/config", headers=bearer(key))).json()
            assert config["cities"] == {"de": ["munich", "nuremberg"]} and config["ttl_minutes_max"] == 1440
            async with running_node(platform, node_settings(["127.0.0.1"]), tmp_path) as node:
                gw = ("127.0.0.1", node.gateway.gateway_port("http"))

                async def exit_of(options: str) -> tuple[int, str]:
                    status, _, body = await http_get(gw, url, basic(f"{login}-{options}", password))
                    return status, body.decode(errors="replace")

                async def exits_of(options: str, n: int = 48) -> set[str]:  # 3 exits missed: p < 1e-8
                    seen = set()
                    for _ in range(n):
                        status, body = await exit_of(options)
                        assert status == 200, body
                        seen.add(body.split()[0])
                    return seen

                assert await exits_of("country-de-city-munich") == set(munich)
                assert await exits_of("country-DE-city-Nuremberg") == set(nuremberg)
                assert await exits_of("country-de-region-by", 96) == set(exits)  # the ISO 3166-2 code
                assert await exits_of("country-de-state-bavaria-asn-as64497") == set(nuremberg)
                assert await exits_of("asn-64496") == set(munich)
                status, body = await exit_of("country-de-city-atlantis")
                assert status == 407 and "username option 'city': no exit in 'atlantis'" in body
                assert "cities in DE: munich, nuremberg" in body
                status, body = await exit_of("country-de-city-munich-asn-64497")
                assert status == 407 and "'asn'" in body and "AS64497" in body and "64496" in body
                status, body = await exit_of("country-de-region-saxony")
                assert status == 407 and "'region'" in body and "bavaria" in body
                status, body = await exit_of("country-de-asn-64499")  # an ASN the country has nowhere
                assert status == 407 and body.strip().endswith(
                    "username option 'asn': no exit in AS64499 (ASNs in DE: 64496, 64497)"), body
                status, body = await exit_of("asn-64499")  # no country: what the whole pool has
                assert status == 407 and "no exit in AS64499 (ASNs: 64496, 64497" in body, body
                # a city-targeted sticky session keeps its exit
                first = (await exit_of("country-de-city-munich-session-c1-ttl-3h"))[1].split()[0]
                assert await exits_of("country-de-city-munich-session-c1-ttl-3h", 6) == {first}
                # SOCKS5 refuses an unknown city too (no tunnel opened)
                socks = ("127.0.0.1", node.gateway.gateway_port("socks"))
                rep, _, _, writer = await socks_connect(socks, "127.0.0.1", origin.port,
                                                        f"{login}-country-de-city-atlantis", password)
                writer.close()
                assert rep != 0
                # the operator moves a Munich exit to Nuremberg: the running node follows
                async with platform.db.unit_of_work(write=True) as uow:
                    await geo.override(uow.session, munich[0], "maxmind", Place(city="Nuremberg", asn=64497))
                    await uow.commit()

                async def moved() -> bool:
                    places = getattr(node.table.get(sid).exit_ips, "places", {})
                    return places.get(munich[0], ("", "", "", 0))[2] == "nuremberg"

                await eventually(moved, within=3.0)
                assert await exits_of("country-de-city-nuremberg", 80) == {munich[0], *nuremberg}
                # each refusal above is in the service's usage errors under `geo`
                await node.flush_usage()
                window = {"start": (datetime.now(UTC) - timedelta(minutes=5)).isoformat(),
                          "end": (datetime.now(UTC) + timedelta(minutes=1)).isoformat()}
                e = (await client.get(f"{API}/{sid}/usage/errors", params=window, headers=bearer(key))).json()
                assert e["errors_by_category"] == {"geo": 6}, e
    finally:
        async with platform.db.unit_of_work(write=True) as uow:
            await uow.session.execute(delete(IpGeo).where(IpGeo.address.in_(exits)))
            await uow.commit()
