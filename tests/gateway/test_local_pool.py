"""Rotating pools that span hosts (issue 15, engineer B): a node chooses only exit IPs local to its host.

Unit: the router's pool leaves out exits outside the local prefixes, refuses a service whose exits are all
elsewhere with 503 ``not_local``, and rebuilds a cached pool when the shared pool dict is refreshed in
place or the prefixes change. End to end: a real node on loopback serving the shared ``proxy_datacenter``
pool with a TEST-NET-3 address (203.0.113.0/24, never local here) added answers every request from a
local exit; a service whose own pool holds only such an address gets the 503 with its reason."""

from __future__ import annotations

import ipaddress
import random
import uuid

import pytest
from sqlalchemy import delete, insert, select, update

from proxyplane.gateway.access import Grant, ServiceEntry
from proxyplane.gateway.protocol.username import UsernameOptions
from proxyplane.gateway.routing import NOT_LOCAL, Router, RoutingError
from proxyplane.gateway.store_load import ExitPool
from proxyplane.storage.models import Service, StockIp
from tests.support import bearer, make_account

from .clients import basic, http_get
from .test_store_static import buy, node_settings, running_node

pytestmark = pytest.mark.anyio
LOOPBACK = [ipaddress.ip_network("127.0.0.0/8"), ipaddress.ip_network("::1/128")]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def rotating(exits: dict[str, str], mode: str = "rotating", pin: str | None = None) -> Grant:
    entry = ServiceEntry("svc-" + uuid.uuid4().hex[:6], "rotating", "u", "p", exit_ips=exits,
                         session_mode=mode, pin=pin)  # type: ignore[arg-type]
    return Grant(entry, None)


def test_only_local_exits_are_chosen() -> None:
    router = Router(rng=random.Random(7))
    exits = ExitPool({"127.0.0.2": "us", "203.0.113.5": "us", "127.0.0.3": "de", "2001:db8::1": "us"})
    grant = rotating(exits)
    assert {router.choose(grant, None) for _ in range(200)} == set(exits)  # no prefixes known: all
    assert router.set_local(LOOPBACK) and not router.set_local(list(LOOPBACK))
    assert {router.choose(grant, None) for _ in range(200)} == {"127.0.0.2", "127.0.0.3"}
    # a country whose only exits are elsewhere: the clear refusal, not a connect failure later
    with pytest.raises(RoutingError) as caught:
        router.choose(Grant(grant.service, _options(country="fr")), None)
    assert caught.value.reason == "geo"
    exits["203.0.113.7"] = "fr"
    exits.version += 1  # what store_load.Pools.refresh does after an in-place re-read
    with pytest.raises(RoutingError) as caught:
        router.choose(Grant(grant.service, _options(country="fr")), None)
    assert (caught.value.status, caught.value.reason, str(caught.value)) == (503, "not_local", NOT_LOCAL)
    # the cached pool follows the refreshed dict: a new local exit is chosen, a removed one no more
    exits["127.0.0.4"] = "us"
    del exits["127.0.0.2"]
    exits.version += 1
    assert {router.choose(grant, None) for _ in range(200)} == {"127.0.0.3", "127.0.0.4"}
    # sticky sessions stay on local exits too, and rotate to local ones
    sticky = rotating(exits, mode="sticky")
    first = router.choose(sticky, None)
    assert first in ("127.0.0.3", "127.0.0.4") and {router.choose(sticky, None) for _ in range(20)} == {first}
    rotated = router.rotate(sticky.service, "default")
    assert rotated is not None and rotated.exit_ip in ("127.0.0.3", "127.0.0.4") and rotated.exit_ip != first
    # prefixes gone (netlink unavailable): nothing filtered
    assert router.set_local(None)
    assert "203.0.113.5" in {router.choose(grant, None) for _ in range(300)}


def test_all_exits_elsewhere_and_pinned() -> None:
    router = Router()
    router.set_local(LOOPBACK)
    away = rotating({"203.0.113.8": "us", "203.0.113.9": "us"})
    with pytest.raises(RoutingError) as caught:
        router.choose(away, None)
    assert (caught.value.status, caught.value.reason) == (503, "not_local")
    pinned = rotating({"203.0.113.8": "us", "127.0.0.2": "us"}, mode="pinned", pin="203.0.113.8")
    with pytest.raises(RoutingError) as caught:
        router.choose(pinned, None)
    assert caught.value.status == 503
    local_pin = rotating({"203.0.113.8": "us", "127.0.0.2": "us"}, mode="pinned", pin="127.0.0.2")
    assert router.choose(local_pin, None) == "127.0.0.2"
    # an empty pool keeps its own reason
    with pytest.raises(RoutingError) as caught:
        router.choose(rotating({}), None)
    assert (caught.value.status, caught.value.reason) == (502, "no_exit_ip")


def _options(country: str | None = None) -> UsernameOptions:
    return UsernameOptions("u", country=country)


async def test_node_never_picks_a_nonlocal_exit(client, platform, account, origin, tmp_path) -> None:
    svc = await buy(client, platform, account, "Rotating datacenter", parameters={})
    key, sid = svc["key"], svc["service_id"]
    auth = (await client.get(f"/api/v1/customer/services/{sid}/proxy/auth?reveal=true",
                             headers=bearer(key))).json()
    login, password = auth["login"], auth["password"]
    first = random.randrange(1, 254)
    away, away_own = f"203.0.113.{first}", f"203.0.113.{first + 1}"
    own_pool = "away_" + uuid.uuid4().hex[:8]
    other = await buy(client, platform, await make_account(platform), "Rotating datacenter", parameters={})
    other_auth = (await client.get(f"/api/v1/customer/services/{other['service_id']}/proxy/auth?reveal=true",
                                   headers=bearer(other["key"]))).json()
    async with platform.db.unit_of_work(write=True) as uow:  # the shared pool spans another host now
        ids = []
        for address, pool in ((away, "proxy_datacenter"), (away_own, own_pool)):
            ids.append((await uow.session.execute(insert(StockIp).values(
                address=address, product_kind=pool, country_maxmind="US", country_ripe="US", capacity=100,
                assigned_count=0).returning(StockIp.id))).scalar_one())
        params = (await uow.session.execute(select(Service.parameters).where(
            Service.service_id == uuid.UUID(other["service_id"])))).scalar_one()
        await uow.session.execute(update(Service).where(Service.service_id == uuid.UUID(other["service_id"]))
                                  .values(parameters={**(params or {}), "exit_pool": own_pool}))
        await uow.commit()
    try:
        async with running_node(platform, node_settings(["127.0.0.1"]), tmp_path) as node:
            assert node.table.get(sid) is not None and away in node.table.get(sid).exit_ips
            gw = ("127.0.0.1", node.gateway.gateway_port("http"))
            url = f"http://127.0.0.1:{origin.port}/"
            seen = set()
            for _ in range(60):
                status, _, body = await http_get(gw, url, basic(login, password))
                assert status == 200, body
                seen.add(body.split()[0].decode())
            assert away not in seen and len(seen) > 1
            status, _, body = await http_get(gw, url, basic(other_auth["login"], other_auth["password"]))
            assert status == 503 and NOT_LOCAL.encode() in body
    finally:  # the session's store is shared: never leave the non-local IP in a pool
        async with platform.db.unit_of_work(write=True) as uow:
            await uow.session.execute(delete(StockIp).where(StockIp.id.in_(ids)))
            await uow.commit()
