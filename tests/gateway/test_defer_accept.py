"""TCP_DEFER_ACCEPT on the engine's listeners (Settings.defer_accept) against its plain twin (0: off):
the same bytes to every client, the same metered rows and error categories, a silent client still
closed with ``head_timeout`` (later by at most the deferral)."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator
from typing import Any

import pytest

from proxyplane.gateway.access import AccessTable, ServiceEntry
from proxyplane.gateway.context import Settings
from proxyplane.gateway.server import Gateway, GatewayConfig

from .clients import open_to
from .test_fastpath import connect_msg, exchange, rows, socks_msgs

pytestmark = pytest.mark.anyio


@pytest.fixture(params=[("asyncio", {"use_uvloop": True})], ids=["uvloop"])
def anyio_backend(request: Any) -> Any:
    return request.param  # uvloop: the C engine serves the tunnel listeners


@contextlib.asynccontextmanager
async def gateway(defer: int) -> AsyncIterator[Gateway]:
    table = AccessTable([ServiceEntry("s1", "rotating", "u", "pw", exit_ips={"127.0.1.3": ""})])
    config = GatewayConfig(gateway_host="127.0.0.1", gateway_http_port=0, gateway_socks_port=0)
    settings = Settings(connect_timeout=3.0, handshake_timeout=0.5, sweep_interval=0.05, allow_loopback=True,
                        defer_accept=defer)
    gw = Gateway(table, config, settings=settings)
    await gw.start()
    try:
        yield gw
    finally:
        await gw.close()


async def conversation(gw: Gateway, port: int) -> list[bytes]:
    http = ("127.0.0.1", gw.gateway_port("http"))
    sock = ("127.0.0.1", gw.gateway_port("socks"))
    out = [await exchange(http, [connect_msg(f"127.0.0.1:{port}", "u")]) for _ in range(2)]
    out += [await exchange(sock, socks_msgs("127.0.0.1", port, "u")) for _ in range(2)]
    out.append(await exchange(http, [connect_msg(f"127.0.0.1:{port}", "u", "wrong")]))
    out.append(await exchange(sock, [b"\x04\x01"]))  # not SOCKS5
    reader, writer = await open_to(http)  # says nothing: closed after the head timeout
    out.append(await asyncio.wait_for(reader.read(), 6))
    writer.close()
    return out


async def test_deferred_accept_answers_and_meters_as_without(origin: Any) -> None:
    results = {}
    for defer in (1, 0):
        async with gateway(defer) as gw:
            assert gw.tunnels is not None
            for listener in gw.tunnels.listeners.values():
                got = listener.sockets[0].getsockopt(socket.IPPROTO_TCP, socket.TCP_DEFER_ACCEPT)
                assert (got > 0) == (defer > 0)
            transcript = await conversation(gw, origin.port)
            await asyncio.sleep(0.05)
            results[defer] = (transcript, rows(gw), dict(gw.ctx.unattributed_errors))
    assert results[1] == results[0]
    assert results[1][2].get("head_timeout") == 1
