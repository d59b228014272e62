"""Issue 14: one static service with 65,536 exit IPs (127.200.0.0/16 plus the IP it was bought with) on a
gateway node reading the store: the node's listening sockets stay under 100 and 500 randomly chosen exit
IPs each carry a request (HTTP, CONNECT, SOCKS5) whose origin sees that IP."""

from __future__ import annotations

import asyncio
import random
import time
import uuid

import httpx
import pytest
from sqlalchemy import String, Uuid, cast, delete, insert, literal, select

from proxyplane.core.clock import utcnow
from proxyplane.platform import Platform
from proxyplane.storage.models import ServiceIp, StockIp
from proxyplane.storage.types import UTCDateTime
from tests.domains.stock.support import fresh_stock
from tests.support import Account

from .clients import basic, connect_tunnel, http_get, socks_connect
from .test_listeners import listening_sockets
from .test_store_static import buy, node_settings, running_node

pytestmark = pytest.mark.anyio
PREFIX = "127.200."  # no other test draws here (random pools of other tests skip 127.200.x.x)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def add_exit_ips(platform: Platform, service_id: str, count: int) -> None:
    """What a big order leaves in the store, written set-based (two INSERT ... SELECT over a recursive
    counter): ``count`` sold-out stock IPs 127.200.x.y and the service's allocations of them."""
    now = utcnow()
    n = select(literal(1).label("i")).cte("n", recursive=True)
    n = n.union_all(select(n.c.i + 1).where(n.c.i < count))
    address = literal(PREFIX) + cast(n.c.i // 256, String) + literal(".") + cast(n.c.i % 256, String)
    stock = select(address, literal("proxy_personal"), literal("US"), literal("US"), literal(1), literal(1),
                   literal(now, UTCDateTime()))
    cols = ["address", "product_kind", "country_maxmind", "country_ripe", "capacity", "assigned_count",
            "created_at"]
    held = select(literal(uuid.UUID(service_id), Uuid()), StockIp.id, StockIp.address, literal("US"),
                  literal(now, UTCDateTime())).where(StockIp.address.like(PREFIX + "%"))
    async with platform.db.unit_of_work(write=True) as uow:
        await uow.session.execute(insert(StockIp).from_select(cols, stock))
        await uow.session.execute(insert(ServiceIp).from_select(
            ["service_id", "ip_id", "address", "country", "allocated_at"], held))
        await uow.commit()


async def remove_exit_ips(platform: Platform) -> None:
    async with platform.db.unit_of_work(write=True) as uow:
        await uow.session.execute(delete(ServiceIp).where(ServiceIp.address.like(PREFIX + "%")))
        await uow.session.execute(delete(StockIp).where(StockIp.address.like(PREFIX + "%")))
        await uow.commit()


async def through(i: int, ip: str, ports: tuple[int, int], origin: int, login: str, password: str) -> str:
    """One request through exit IP ``ip`` (HTTP, CONNECT or SOCKS5 by ``i``): the peer the origin saw."""
    http_port, socks_port = ports
    cred = basic(login, password)
    if i % 3 == 0:
        status, _, body = await http_get((ip, http_port), f"http://127.0.0.1:{origin}/{i}", cred)
        assert status == 200, (ip, status)
        return body.split()[0].decode()
    if i % 3 == 1:
        status, reader, writer = await connect_tunnel((ip, http_port), f"127.0.0.1:{origin}", cred)
    else:
        rep, _, reader, writer = await socks_connect((ip, socks_port), "127.0.0.1", origin, login, password)
        status = 200 if rep == 0 else 500
    assert status == 200, (ip, status)
    writer.write(f"GET /{i} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
    body = await asyncio.wait_for(reader.read(), 5)
    writer.close()
    return body.split(b"\r\n\r\n", 1)[1].split()[0].decode()


async def test_65536_exit_ips_on_a_handful_of_listeners(
    client: httpx.AsyncClient, platform: Platform, account: Account, origin, tmp_path
) -> None:
    bought = await fresh_stock(platform, "proxy_personal", "US", 1)
    svc = await buy(client, platform, account, "Dedicated IP", parameters={})
    auth = (await client.get(f"/api/v1/customer/services/{svc['service_id']}/proxy/auth?reveal=true",
                             headers={"Authorization": f"Bearer {svc['key']}"})).json()
    login, password = auth["login"], auth["password"]
    more = [f"{PREFIX}{n >> 8}.{n & 0xFF}" for n in range(1, 1 << 16)]
    exits = bought + more
    assert len(exits) == 65_536
    settings = node_settings(bought).model_copy(update={"static_bind": "0.0.0.0"})
    started = time.perf_counter()
    await add_exit_ips(platform, svc["service_id"], len(more))
    inserted = time.perf_counter() - started
    try:
        before = listening_sockets()
        started = time.perf_counter()
        async with running_node(platform, settings, tmp_path) as node:
            cold = time.perf_counter() - started
            entry = node.table.get(svc["service_id"])
            assert entry is not None and len(entry.exit_ips) == 65_536
            assert len(node.gateway.static_ips()) >= 65_536  # other tests' static services may be there too
            opened = listening_sockets() - before
            assert opened < 100, opened  # 4 here: rotating http + socks, static http + socks
            ports = (node.gateway.static_port(exits[0], "http"), node.gateway.static_port(exits[0], "socks"))
            chosen = random.Random(14).sample(exits, 500)
            gate = asyncio.Semaphore(32)

            async def one(i: int, ip: str) -> str:
                async with gate:
                    return await through(i, ip, ports, origin.port, login, password)

            started = time.perf_counter()
            seen = await asyncio.gather(*(one(i, ip) for i, ip in enumerate(chosen)))
            served = time.perf_counter() - started
            assert seen == chosen  # each origin request came from the exit IP the client dialed
            assert set(chosen) <= {peer for peer, _, _ in origin.seen}
    finally:  # the next tests' nodes load the whole store: leave it as it was
        await remove_exit_ips(platform)
    print(f"\n65,536 exit IPs: insert {inserted:.2f} s, node cold start {cold:.2f} s, {opened} listening "
          f"sockets, 500 requests in {served:.2f} s")
