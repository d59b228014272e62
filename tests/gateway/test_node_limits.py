"""A service's concurrent-connection limit holds across two gateway nodes on one store (node_limits.py):
each node admits a connection only while its own count plus the others' reported counts is under it."""

from __future__ import annotations

import asyncio
import uuid

import httpx
import pytest
from sqlalchemy import select

from proxyplane.core.clock import utcnow
from proxyplane.platform import Platform
from proxyplane.storage.models import Service
from proxyplane.storage.models.gateway_health import GatewayNodeConnections
from tests.support import Account, bearer

from .clients import basic, connect_tunnel, read_response
from .test_store_static import API, buy, eventually, node_settings, running_node

pytestmark = pytest.mark.anyio
LIMIT = 3


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def limited_rotating(
    client: httpx.AsyncClient, platform: Platform, account: Account, limit: int
) -> tuple[str, dict[str, str]]:
    """A rotating service whose connection limit is ``limit``: (service_id, its revealed login/password)."""
    svc = await buy(client, platform, account, "Rotating datacenter", parameters={})
    key, sid = svc["key"], svc["service_id"]
    async with platform.db.unit_of_work() as uow:
        row = (
            await uow.session.execute(select(Service).where(Service.service_id == uuid.UUID(sid)))
        ).scalar_one()
        row.max_connections, row.updated_at = limit, utcnow()
        await uow.commit()
    auth = (await client.get(f"{API}/{sid}/proxy/auth?reveal=true", headers=bearer(key))).json()
    return sid, auth


async def test_connection_limit_is_shared_by_two_nodes(
    client: httpx.AsyncClient, platform: Platform, account: Account, origin, tmp_path
) -> None:
    sid, auth = await limited_rotating(client, platform, account, LIMIT)
    proxy_auth = basic(auth["login"], auth["password"])
    target = f"127.0.0.1:{origin.port}"
    settings = node_settings(["127.0.0.1"]).model_copy(update={"limit_refresh_seconds": 0.25})
    held: list[asyncio.StreamWriter] = []

    async def tunnel(node) -> int:
        status, reader, writer = await connect_tunnel(
            ("127.0.0.1", node.gateway.gateway_port("http")), target, proxy_auth
        )
        if status != 200:
            writer.close()
            return status
        writer.write(b"GET /held HTTP/1.1\r\nHost: x\r\n\r\n")  # the tunnel really works
        assert (await read_response(reader))[0] == 200
        held.append(writer)
        return status

    try:
        async with (
            running_node(platform, settings, tmp_path) as a,
            running_node(platform, settings, tmp_path) as b,
        ):
            await eventually(lambda: _limit_is(a, sid, LIMIT), within=5.0)
            await eventually(lambda: _limit_is(b, sid, LIMIT), within=5.0)
            assert await tunnel(a) == 200 and await tunnel(a) == 200
            assert a.gateway.limiter.current(sid) == 2 and b.gateway.limiter.current(sid) == 0

            async def b_sees(n: int) -> bool:
                return b.gateway.limiter.others(sid) == n

            await eventually(lambda: b_sees(2), within=5.0)
            assert await tunnel(b) == 200  # the third of three
            assert await tunnel(b) == 429  # b's own count is 1: without a's two it would admit this

            async def a_sees(n: int) -> bool:
                return a.gateway.limiter.others(sid) == n

            await eventually(lambda: a_sees(1), within=5.0)
            assert await tunnel(a) == 429
            # one of a's tunnels ends: b may open one again once it has heard
            held.pop(0).close()
            await eventually(lambda: b_sees(1), within=5.0)
            assert await tunnel(b) == 200
            assert await tunnel(b) == 429
            await eventually(lambda: a_sees(2), within=5.0)  # within the consistency window a may not know
            assert await tunnel(a) == 429
            # each node published one row, refreshed in place (no per-connection writes)
            async with platform.db.unit_of_work(write=False) as uow:
                rows = {
                    r.node_id: r.counts
                    for r in (await uow.session.execute(select(GatewayNodeConnections))).scalars()
                    if r.node_id in (a.sticky.node_id, b.sticky.node_id)
                }
            assert rows[a.sticky.node_id].get(sid) == 1 and rows[b.sticky.node_id].get(sid) == 2
            node_b_id = b.sticky.node_id
        # a closed node deletes its row
        async with platform.db.unit_of_work(write=False) as uow:
            ids = set((await uow.session.execute(select(GatewayNodeConnections.node_id))).scalars())
        assert node_b_id not in ids
    finally:
        for w in held:
            w.close()


async def _limit_is(node, service_id: str, limit: int) -> bool:
    entry = node.table.get(service_id)
    return entry is not None and entry.max_connections == limit
