"""A sticky session on an upstream pool (issue 36.4) is one session for every worker of a host (the shared
table) and every node (the store), on loopback: the first supplier is a pproxy process (the origin sees
127.0.0.1), the second a supplier gateway whose exits are 127.0.3.x. The session starts on pproxy, pproxy
dies, the session moves to the supplier gateway; pproxy comes back on its port: a worker or node that
never saw it fail still sends the session to the supplier gateway, where it keeps its exit. The sticky
API does not list such a session (it has no exit IP of ours)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from sqlalchemy import delete

from proxyplane.gateway.access import AccessTable, ServiceEntry
from proxyplane.gateway.server import Gateway, GatewayConfig
from proxyplane.gateway.shared_counts import SharedRegion
from proxyplane.gateway.shared_sticky import SharedSticky
from proxyplane.gateway.sticky_sync import SharedRouter
from proxyplane.platform import Platform
from proxyplane.storage.models.gateway import SUPPLIER_MARK
from proxyplane.storage.models.gateway import StickySession as StickyRow
from proxyplane.storage.models.upstreams import Upstream
from tests.domains.operators.helpers import run
from tests.domains.subusers.support import make_service
from tests.domains.upstreams.suppliers import free_tcp_port, pproxy
from tests.support import Account, bearer

from .clients import basic, connect_tunnel, read_response, request
from .test_store_static import node_settings, running_node
from .test_upstream_pools import TEMPLATE, settings, supplier, upstream

pytestmark = pytest.mark.anyio
__all__ = ["supplier"]  # the supplier gateway fixture (127.0.3.x exits)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def exit_seen(http: tuple[str, int], login: str, password: str, origin_port: int) -> str:
    """The address the origin saw for one tunnel through the gateway at ``http``."""
    status, reader, writer = await connect_tunnel(http, f"127.0.0.1:{origin_port}", basic(login, password))
    assert status == 200, status
    writer.write(request("/", extra="Connection: close\r\n"))
    _, _, body, _ = await read_response(reader)
    writer.close()
    return body.split(b" ")[0].decode()


@pytest.fixture
async def workers() -> AsyncIterator[list[Gateway]]:
    """Two resellers as two workers of one host: each its own router over the host's shared table."""
    shared = SharedSticky(SharedRegion(1 << 20), 1024)
    config = GatewayConfig(gateway_host="127.0.0.1", gateway_http_port=0, gateway_socks_port=0)
    gws = []
    for _ in range(2):
        entry = ServiceEntry("resold", "rotating", "cust", "pw", exit_ips={}, max_connections=100,
                             upstream_pool="resi")
        gw = Gateway(AccessTable([entry]), config, settings=settings(), router=SharedRouter(shared=shared))
        await gw.start()
        gws.append(gw)
    yield gws
    for gw in gws:
        await gw.close()


async def test_a_moved_session_is_the_same_for_every_worker(
    supplier: Gateway, workers: list[Gateway], origin: Any
) -> None:
    a, b = (("127.0.0.1", gw.gateway_port("http")) for gw in workers)
    port = free_tcp_port()
    first, second = upstream(port, 1, template="{user}"), upstream(supplier.gateway_port("http"), 2)
    for gw in workers:
        gw.ctx.upstreams.replace([first, second])
    login = "cust-session-s1-ttl-30m"
    async with pproxy("http", "acct", "sup-pw", port=port):
        assert await exit_seen(a, login, "pw", origin.port) == "127.0.0.1"  # on pproxy
        assert await exit_seen(b, login, "pw", origin.port) == "127.0.0.1"
    moved = await exit_seen(a, login, "pw", origin.port)  # pproxy died: moved to the supplier gateway
    assert moved.startswith("127.0.3.")
    async with pproxy("http", "acct", "sup-pw", port=port):  # back, and worker b never saw it fail
        for http in (b, a, b):
            assert await exit_seen(http, login, "pw", origin.port) == moved
        assert await exit_seen(b, "cust-session-s2", "pw", origin.port) == "127.0.0.1"  # new: the first


async def _stored_exit(platform: Platform, service_id: uuid.UUID, sid: str) -> str | None:
    async with platform.db.unit_of_work() as uow:
        row = await uow.session.get(StickyRow, (service_id, sid))
    return None if row is None else row.exit_ip


async def _until(check: Any, seconds: float = 15.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while not await check():
        assert loop.time() < deadline, "not within the time"
        await asyncio.sleep(0.1)


async def test_a_moved_session_is_the_same_on_every_node_and_not_listed(
    client: httpx.AsyncClient, platform: Platform, account: Account, supplier: Gateway, origin: Any,
    tmp_path: Any,
) -> None:
    pool = f"s{uuid.uuid4().hex[:10]}"
    svc = await make_service(platform, account, parameters={"upstream_pool": pool})
    port = free_tcp_port()
    one = await run(platform, "operator_upstream_add", pool=pool, scheme="http", host="127.0.0.1", port=port,
                    username="acct", password="sup-pw")
    two = await run(platform, "operator_upstream_add", pool=pool, scheme="http", host="127.0.0.1",
                    port=supplier.gateway_port("http"), username="acct", password="sup-pw", template=TEMPLATE)
    mark_one, mark_two = (SUPPLIER_MARK + uuid.UUID(u["upstream_id"]).hex for u in (one, two))
    login, password = f"{svc.login}-session-s1", "service-password"
    try:
        async with running_node(platform, node_settings(["127.0.0.1"]), tmp_path / "a") as node_a, \
                running_node(platform, node_settings(["127.0.0.1"]), tmp_path / "b") as node_b:
            a, b = (("127.0.0.1", n.gateway.gateway_port("http")) for n in (node_a, node_b))
            async with pproxy("http", "acct", "sup-pw", port=port):
                assert await exit_seen(a, login, password, origin.port) == "127.0.0.1"
                await _until(lambda: _is(platform, svc.service_id, mark_one))  # in the store
            moved = await exit_seen(a, login, password, origin.port)
            assert moved.startswith("127.0.3.")
            await _until(lambda: _is(platform, svc.service_id, mark_two))
            async with pproxy("http", "acct", "sup-pw", port=port):
                await _until(lambda: _held(node_b, str(svc.service_id), mark_two))  # node b took it
                for http in (b, a):
                    assert await exit_seen(http, login, password, origin.port) == moved
            key = await account.key()
            r = await client.get(f"/api/v1/customer/services/{svc.service_id}/proxy/sticky/sessions",
                                 headers=bearer(key))
            assert r.status_code == 200 and r.json()["sessions"] == [], r.text  # no exit IP of ours
    finally:
        async with platform.db.unit_of_work() as uow:
            await uow.session.execute(delete(Upstream).where(Upstream.pool == pool))
            await uow.commit()


async def _is(platform: Platform, service_id: uuid.UUID, mark: str) -> bool:
    return await _stored_exit(platform, service_id, "s1") == mark


async def _held(node: Any, service_id: str, mark: str) -> bool:
    return bool(node.router.held(service_id, "s1") == mark)


def test_a_move_wins_over_the_version_it_replaced_on_every_router() -> None:
    """Between nodes (and workers, in the store) the session started first wins; a move counts as started
    just before the version it replaces, so a stale copy of that version never takes the session back."""
    clock = [1_000.0]
    x, y = SharedRouter(lambda: clock[0]), SharedRouter(lambda: clock[0])
    x.hold("svc", "s1", SUPPLIER_MARK + "1" * 32, 600)
    first = x.session("svc", "s1")
    assert first is not None
    assert y.adopt("svc", "s1", first.exit_ip, first.started, first.expires, False)
    clock[0] += 5
    y.hold("svc", "s1", SUPPLIER_MARK + "2" * 32, 600)  # y's first supplier failed: moved
    moved = y.session("svc", "s1")
    assert moved is not None and moved.expires == first.expires and moved.started < first.started
    assert not y.adopt("svc", "s1", first.exit_ip, first.started, first.expires, False)  # x's stale copy
    assert y.held("svc", "s1") == SUPPLIER_MARK + "2" * 32 and ("svc", "s1") in y.dirty  # written again
    assert x.adopt("svc", "s1", moved.exit_ip, moved.started, moved.expires, False)
    assert x.held("svc", "s1") == SUPPLIER_MARK + "2" * 32
