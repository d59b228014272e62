"""Service quotas enforced by a real node (issue 32), end to end on loopback on both tunnel paths (the Python
relay and the C engine): a 4 MiB quota serves CONNECT and SOCKS5 tunnels through a TCP echo until the node
has counted 4 MiB, then cuts them within a harvest (about a second); new requests are refused with 402 and
`Proxy-Status: ...; error=quota_exhausted` (HTTP, CONNECT) or the failed-auth reply (SOCKS5); the flush
sets limit_reached and sends the 80 % and 100 % events; the refusals and cuts are in the service's usage
errors; bought traffic (add_traffic) serves it again on the node."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from proxyplane.domains.quotas import service as quotas
from proxyplane.platform import Platform
from tests.domains.quotas.support import MIB, errors_of, events_of, metered_service, quota_row, service_of
from tests.domains.stock.support import fresh_stock
from tests.support import Account

from .clients import basic, connect_tunnel, http_get, socks_connect
from .conftest import BACKENDS
from .test_store_static import eventually, node_settings, running_node

pytestmark = pytest.mark.anyio

QUOTA = 4 * MIB
CHUNK = b"q" * 65536
PASSWORD = "service-password"  # tests/domains/subusers/support.make_service


@pytest.fixture(params=BACKENDS, ids=lambda b: "engine" if b[1] else "python")
def anyio_backend(request: Any) -> Any:
    return request.param


async def echo_once(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
    try:
        writer.write(CHUNK)
        await writer.drain()
        await asyncio.wait_for(reader.readexactly(len(CHUNK)), 2)
        return True
    except (asyncio.IncompleteReadError, ConnectionError, TimeoutError):
        return False


async def pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, within: float) -> int:
    """Echo chunks (about 2.5 MB/s) until the tunnel is cut; the bytes moved (up + down)."""
    moved, loop = 0, asyncio.get_running_loop()
    deadline = loop.time() + within
    while loop.time() < deadline:
        if not await echo_once(reader, writer):
            return moved
        moved += 2 * len(CHUNK)
        await asyncio.sleep(0.05)
    raise AssertionError(f"the tunnel was not cut after {moved} bytes")


async def test_a_4_mib_quota_is_enforced_and_bought_traffic_serves_again(
    client: httpx.AsyncClient, platform: Platform, account: Account, tcp_echo: Any, tmp_path: Any
) -> None:
    await fresh_stock(platform, "proxy_datacenter", "US", 1)
    svc = await metered_service(platform, account, QUOTA)
    auth = basic(svc.login, PASSWORD)
    target = f"127.0.0.1:{tcp_echo.port}"
    async with running_node(platform, node_settings(["127.0.0.1"]), tmp_path) as node:
        http = ("127.0.0.1", node.gateway.gateway_port("http"))
        socks = ("127.0.0.1", node.gateway.gateway_port("socks"))
        status, c_reader, c_writer = await connect_tunnel(http, target, auth)
        rep, _, s_reader, s_writer = await socks_connect(
            socks, "127.0.0.1", tcp_echo.port, svc.login, PASSWORD
        )
        assert (status, rep) == (200, 0)
        moved = await pump(c_reader, c_writer, within=20)
        # the node counted the quota, then cut within one harvest (1 s at ~2.5 MB/s of echo)
        assert QUOTA - 2 * len(CHUNK) <= moved <= QUOTA + 3 * MIB, moved
        print(f"quota {QUOTA} B, moved before the cut {moved} B, overshoot {moved - QUOTA} B")
        assert not await echo_once(s_reader, s_writer)  # its SOCKS5 tunnel is gone too
        for w in (c_writer, s_writer):
            w.close()
        status, headers, body = await http_get(http, f"http://{target}/", auth)
        assert status == 402 and b"quota_exhausted" in body and b"add_traffic" in body
        assert "error=quota_exhausted" in headers["proxy-status"]
        status, _, _ = await connect_tunnel(http, target, auth)
        assert status == 402
        rep, _, _, w = await socks_connect(socks, "127.0.0.1", tcp_echo.port, svc.login, PASSWORD)
        assert rep == "auth-failed"
        w.close()
        await node.flush_usage()

        row = await quota_row(platform, svc.service_id)
        assert row.limit_reached and row.used_bytes >= QUOTA and row.notified_pct == 100
        kinds = [e.type for e in await events_of(platform, account.customer_id)]
        assert kinds == ["service.quota_80", "service.quota_100"]
        errors = await errors_of(platform, svc.service_id)
        assert errors.get("quota_exhausted", 0) >= 5  # 2 tunnels cut + 3 refusals

        await account.credit(1_000)
        async with platform.db.unit_of_work() as uow:
            loaded = await service_of(uow.session, svc.service_id)
            usage, cents = await quotas.add_traffic(uow.session, loaded, 1)
            await uow.commit()
        assert cents == 250 and usage.limit_bytes == QUOTA + quotas.GB and not usage.exhausted

        async def serves() -> bool:
            got, _, _ = await http_get(http, f"http://{target}/", auth)
            return got != 402

        await eventually(serves, within=5.0)
        status, c_reader, c_writer = await connect_tunnel(http, target, auth)
        assert status == 200 and await echo_once(c_reader, c_writer)
        c_writer.close()


async def test_two_nodes_overshoot_at_most_one_flush(
    platform: Platform, account: Account, tcp_echo: Any, tmp_path: Any
) -> None:
    """One tunnel on each of two nodes, both pumping: each node cuts on its own count, or when the other's
    flush set limit_reached in the store (change log). The overshoot is at most what the nodes move in
    one usage flush interval plus the change poll and a harvest."""
    await fresh_stock(platform, "proxy_datacenter", "US", 1)
    svc = await metered_service(platform, account, QUOTA)
    auth = basic(svc.login, PASSWORD)
    target = f"127.0.0.1:{tcp_echo.port}"
    flush_s = 1.0
    settings = node_settings(["127.0.0.1"]).model_copy(update={"usage_flush_seconds": flush_s})
    async with (
        running_node(platform, settings, tmp_path / "a") as a,
        running_node(platform, settings, tmp_path / "b") as b,
    ):
        tunnels = []
        for node in (a, b):
            status, reader, writer = await connect_tunnel(
                ("127.0.0.1", node.gateway.gateway_port("http")), target, auth
            )
            assert status == 200
            tunnels.append((reader, writer))
        loop = asyncio.get_running_loop()
        began = loop.time()
        moved = await asyncio.gather(*(pump(r, w, within=30) for r, w in tunnels))
        seconds = loop.time() - began
        for _, w in tunnels:
            w.close()
        total = sum(moved)
        rate = total / seconds
        bound = QUOTA + rate * (flush_s + settings.poll_seconds + 1.0)
        print(f"two nodes: quota {QUOTA} B, moved {moved} = {total} B in {seconds:.2f} s, "
              f"overshoot {total - QUOTA} B, bound {bound:.0f} B")  # fmt: skip
        assert QUOTA <= total <= bound
        for node in (a, b):
            status, headers, _ = await http_get(
                ("127.0.0.1", node.gateway.gateway_port("http")), f"http://{target}/", auth
            )
            assert status == 402 and "quota_exhausted" in headers["proxy-status"]
