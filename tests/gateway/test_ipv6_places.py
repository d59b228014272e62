"""Issue 36: an IPv6 service's subnets lie where their routed prefix does: the router narrows them by the
username's -region-/-city-/-asn- (refusals as for IPv4 pools), a sub-user's country view keeps the places,
and the store loads each subnet's place from its prefix's geo row, following an operator's override of the
prefix through the change log."""

from __future__ import annotations

import ipaddress
import random

import pytest
from sqlalchemy import delete

from proxyplane.gateway.access import Grant, ServiceEntry
from proxyplane.gateway.protocol.username import parse_username
from proxyplane.gateway.routing import Router, RoutingError
from proxyplane.gateway.subnets import SubnetExits
from proxyplane.storage.models import IpGeo
from tests.domains.operators.helpers import run

from .test_ipv6_exits import ipv6_service, routed_prefix
from .test_store_changes import store_sync
from .test_store_static import eventually

pytestmark = pytest.mark.anyio
MUNICH, LEIPZIG, NOWHERE = "2001:db8:0:5::/64", "2001:db8:0:6::/64", "2001:db8:0:7::/64"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def exits() -> SubnetExits:
    return SubnetExits({MUNICH: "de", LEIPZIG: "de", NOWHERE: "de"}.items(), {
        MUNICH: ("bavaria", "by", "munich", 64496), LEIPZIG: ("saxony", "sn", "leipzig", 64497)})


def subnet_of(address: str) -> str:
    return str(ipaddress.IPv6Network(f"{address}/64", strict=False))


def drawn(router: Router, username: str, table: SubnetExits | None = None) -> set[str]:
    entry = ServiceEntry("svc-v6", "rotating", "u", "p", table or exits(),
                         session_mode="rotating")  # type: ignore[arg-type]
    grant = Grant(entry, parse_username(username))
    return {subnet_of(router.choose(grant, None)) for _ in range(40)}


def test_router_narrows_subnets_by_place() -> None:
    router = Router(rng=random.Random(3))
    assert drawn(router, "u") == {MUNICH, LEIPZIG, NOWHERE}
    assert drawn(router, "u-country-de-city-munich") == {MUNICH}
    assert drawn(router, "u-country-de-region-sn") == {LEIPZIG}
    assert drawn(router, "u-asn-64497") == {LEIPZIG}
    with pytest.raises(RoutingError) as refused:
        drawn(router, "u-country-de-city-paris")
    assert refused.value.status == 407 and refused.value.reason == "geo"
    assert str(refused.value) == "username option 'city': no exit in 'paris' (cities in DE: leipzig, munich)"
    with pytest.raises(RoutingError) as both:
        drawn(router, "u-country-de-region-by-city-leipzig")  # each exists, not together
    assert "in region 'by'" in str(both.value)
    # a sub-user's country view (gateway/subusers.py builds it so) keeps the places
    table = exits()
    view = SubnetExits(((c, k) for c, k in table.items() if k in {"de"}), table.places)
    assert drawn(router, "u-country-de-city-leipzig", view) == {LEIPZIG}


async def test_store_loads_subnet_places_from_the_prefix(client, platform, account) -> None:
    prefix = await routed_prefix(platform, "IS")
    svc = await ipv6_service(client, account, "IS")
    try:
        async with store_sync(platform) as sync:
            loaded = sync.table.rotating_by_login(svc["login"])
            assert loaded is not None and loaded.exit_ips.places == {}  # the prefix is placed nowhere yet
            await run(platform, "operator_geo_override", address=prefix, region="Capital Region",
                      region_code="1", city="Reykjavík", asn=64511)

            async def placed() -> bool:
                await sync.poll()
                now = sync.table.get(svc["service_id"])
                return now is not None and now.exit_ips.places.get(svc["subnet"]) == (
                    "capitalregion", "1", "reykjavik", 64511)

            await eventually(placed, within=3.0)
    finally:
        async with platform.db.unit_of_work() as uow:
            await uow.session.execute(delete(IpGeo).where(IpGeo.address == prefix))
            await uow.commit()
