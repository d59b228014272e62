"""Exit IPs that are not local to the node (issue 14.1): a static service holding a loopback IP and an IPv4
documentation address (TEST-NET-3, 203.0.113.0/24, never local here) on a gateway node reading the store:
the node reports the non-local IP in its status and the legacy networkstatus/inactive lists it while a node
is live; the loopback IP and other services keep working."""

from __future__ import annotations

import random

import httpx
import pytest
from sqlalchemy import delete, insert

from proxyplane.core.address_prefixes import outside
from proxyplane.domains.services import service as services
from proxyplane.gateway.local_ips import local_prefixes
from proxyplane.platform import Platform
from proxyplane.storage.models import ServiceIp, StockIp
from proxyplane.storage.models.gateway_nodes import GatewayNodeAddresses
from tests.adapters.legacy.support import auth, buy, static_product
from tests.support import Account

from .clients import basic, http_get
from .test_store_static import node_settings, running_node

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def test_local_prefixes_are_few_and_cover_loopback():
    prefixes = local_prefixes()
    assert prefixes is not None and len(prefixes) < 50
    assert [str(p) for p in prefixes if p.version == 4 and p.network_address.is_loopback] == ["127.0.0.0/8"]
    ips = ["127.0.0.1", "127.200.3.4", "203.0.113.9", "::1", "2001:db8::1", "not an ip"]
    assert outside(ips, prefixes) == ["203.0.113.9", "2001:db8::1", "not an ip"]


async def test_nonlocal_exit_ip_is_reported_and_disturbs_nothing(
    client: httpx.AsyncClient, platform: Platform, account: Account, origin, tmp_path
) -> None:
    await account.credit(10_000)
    number = (await buy(client, account, (await static_product(platform, ips=1))[0]))["serviceId"]
    async with platform.db.unit_of_work(write=False) as uow:
        svc = await services.get_by_number(uow.session, number)
        assert svc is not None
        [local_ip] = [i.address for i in await services.service_ips(uow.session, svc.service_id)]
        login, password = svc.login, services.reveal_password(platform.secrets, svc)
    away = f"203.0.113.{random.randrange(1, 255)}"
    async with platform.db.unit_of_work(write=True) as uow:  # a second IP of the order: not on this host
        await uow.session.execute(insert(StockIp).values(
            address=away, product_kind="proxy_datacenter", country_maxmind="MD", country_ripe="MD",
            capacity=1, assigned_count=1))
        stock_id = (await uow.session.execute(
            StockIp.__table__.select().where(StockIp.address == away))).one().id
        await uow.session.execute(insert(ServiceIp).values(
            service_id=svc.service_id, ip_id=stock_id, address=away, country="MD"))
        await uow.commit()
    try:
        await _check_reported(client, platform, account, number, local_ip, away, login, password, origin,
                              tmp_path)
    finally:  # the session's store is shared: a non-local IP left in the rotating pool would fail others
        async with platform.db.unit_of_work(write=True) as uow:
            await uow.session.execute(delete(ServiceIp).where(ServiceIp.ip_id == stock_id))
            await uow.session.execute(delete(StockIp).where(StockIp.id == stock_id))
            await uow.commit()


async def _check_reported(client: httpx.AsyncClient, platform: Platform, account: Account, number: int,
                          local_ip: str, away: str, login: str, password: str, origin, tmp_path) -> None:
    inactive = f"/api/networkstatus/inactive/{number}"
    async with platform.db.unit_of_work(write=True) as uow:  # no node runs now: any row is a dead node's
        await uow.session.execute(delete(GatewayNodeAddresses))  # (killed or cut off from the store: fresh
        await uow.commit()  # for STALE seconds, which the shared store's next tests would see)
    r = await client.get(inactive, headers=auth(account))
    assert r.json() == []  # no live node has reported its addresses: nothing to say yet
    settings = node_settings([local_ip]).model_copy(update={"static_bind": "0.0.0.0"})
    async with running_node(platform, settings, tmp_path) as node:
        status = node.status()
        assert status["nonlocal_exit_ips"] >= 1 and away in status["nonlocal_sample"]
        assert "127.0.0.0/8" in status["local_prefixes"] and status["listening_sockets"] == 4
        assert any("not local to this host" in line for line in node.listeners())
        r = await client.get(inactive, headers=auth(account))
        assert (r.status_code, r.json()) == (200, [away])
        # the service's local exit IP serves as before, the non-local one is simply not reachable here
        port = node.gateway.static_port(local_ip, "http")
        status_code, _, body = await http_get((local_ip, port), f"http://127.0.0.1:{origin.port}/a",
                                              basic(login, password))
        assert status_code == 200 and body.split()[0].decode() == local_ip
    r = await client.get(inactive, headers=auth(account))
    assert r.json() == []  # the node stopped and removed its row
