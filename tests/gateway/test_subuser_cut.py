"""A sub-user's open tunnels are ended when it reaches its traffic limit (issue 18), end to end on loopback
through a real node on both tunnel paths (the Python relay and the C engine): a CONNECT tunnel and a
SOCKS5 tunnel of the limited sub-user move bytes through a TCP echo until the limit is crossed, then the
node closes both within about a second of the crossing; another sub-user's tunnel, open all along, keeps
echoing until that sub-user is disabled through the API; new connections of the limited sub-user are
refused with the reason; the cuts are metered under their reasons."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from proxyplane.platform import Platform
from tests.domains.stock.support import fresh_stock
from tests.domains.subusers.support import make_service
from tests.support import Account, bearer

from .clients import basic, connect_tunnel, http_get, socks_connect
from .test_store_static import API, eventually, node_settings, running_node
from .test_subusers import add_subusers, pks_of, sums

pytestmark = pytest.mark.anyio

LIMIT = 200_000  # bytes (up + down)
CHUNK = b"x" * 8192


async def echo_once(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
    """Send a chunk and read it back; False once the tunnel is closed."""
    try:
        writer.write(CHUNK)
        await writer.drain()
        await asyncio.wait_for(reader.readexactly(len(CHUNK)), 2)
        return True
    except (asyncio.IncompleteReadError, ConnectionError):
        return False


async def test_tunnels_are_cut_at_the_traffic_limit(
    client: httpx.AsyncClient, platform: Platform, account: Account, tcp_echo: Any, tmp_path: Any
) -> None:
    await fresh_stock(platform, "proxy_datacenter", "US", 1)
    svc = await make_service(platform, account, parameters={"exit_pool": "proxy_datacenter"})
    key, sid = await account.key(), str(svc.service_id)
    subs = await add_subusers(client, key, sid, {"capped": {"traffic_limit_bytes": LIMIT}, "free": {}})
    capped, free = subs["capped"], subs["free"]
    target = f"127.0.0.1:{tcp_echo.port}"
    async with running_node(platform, node_settings(["127.0.0.1"]), tmp_path) as node:
        http = ("127.0.0.1", node.gateway.gateway_port("http"))
        socks = ("127.0.0.1", node.gateway.gateway_port("socks"))
        status, c_reader, c_writer = await connect_tunnel(http, target, basic(capped[1], capped[2]))
        rep, _, s_reader, s_writer = await socks_connect(
            socks, "127.0.0.1", tcp_echo.port, capped[1], capped[2]
        )
        status_free, f_reader, f_writer = await connect_tunnel(http, target, basic(free[1], free[2]))
        assert (status, rep, status_free) == (200, 0, 200)

        moved, loop = 0, asyncio.get_running_loop()
        crossed_at = None
        deadline = loop.time() + 10
        while loop.time() < deadline:
            alive = await echo_once(c_reader, c_writer)
            if not alive:
                break
            moved += 2 * len(CHUNK)  # up and down
            if moved >= LIMIT and crossed_at is None:
                crossed_at = loop.time()
            await asyncio.sleep(0.01)
        else:
            raise AssertionError("the capped sub-user's CONNECT tunnel was not cut")
        assert crossed_at is not None and moved >= LIMIT  # not before the limit
        assert loop.time() - crossed_at < 3.0  # harvest + check every second
        assert not await echo_once(s_reader, s_writer)  # its SOCKS5 tunnel is gone too
        assert await echo_once(f_reader, f_writer)  # the other sub-user's tunnel is untouched
        status, _, body = await http_get(http, f"http://{target}/", basic(capped[1], capped[2]))
        assert status == 407 and b"traffic limit" in body
        # disabling a sub-user through the API ends its open tunnel too (change log + the next check)
        r = await client.patch(
            f"{API}/{sid}/subusers/{free[0]}", json={"enabled": False}, headers=bearer(key)
        )
        assert r.status_code == 200, r.text

        async def free_cut() -> bool:
            return not await echo_once(f_reader, f_writer)

        await eventually(free_cut, within=3.0)
        for w in (c_writer, s_writer, f_writer):
            w.close()
        await node.flush_usage()

    capped_pk, free_pk = await pks_of(platform, [capped[0], free[0]])
    got = await sums(platform, sid, [capped_pk, free_pk])
    assert got["reached"][capped_pk] is True and got["reached"][free_pk] is False
    assert got["svc_errors"]["subuser_traffic_limit"] >= 3  # two tunnels cut + the refused request
    assert got["svc_errors"]["subuser_disabled"] == 1
