"""Long tunnels relayed with splice() (csrc/splice.c, Settings.splice_after) against the plain copy
(0): the same bytes both ways under backpressure, the half-close passed on, the same metered rows."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest

from proxyplane.gateway.access import AccessTable, ServiceEntry
from proxyplane.gateway.context import Settings
from proxyplane.gateway.server import Gateway, GatewayConfig

from .clients import basic, connect_tunnel, socks_connect

pytestmark = pytest.mark.anyio
SIZE = 6 * 1024 * 1024


@pytest.fixture(params=[("asyncio", {"use_uvloop": True})], ids=["uvloop"])
def anyio_backend(request: Any) -> Any:
    return request.param  # uvloop: the C engine serves the tunnel listeners


@contextlib.asynccontextmanager
async def gateway(after: int) -> AsyncIterator[Gateway]:
    table = AccessTable([ServiceEntry("s1", "rotating", "u", "pw", exit_ips={"127.0.1.3": ""})])
    config = GatewayConfig(gateway_host="127.0.0.1", gateway_http_port=0, gateway_socks_port=0)
    settings = Settings(connect_timeout=3.0, allow_loopback=True, splice_after=after)
    gw = Gateway(table, config, settings=settings)
    await gw.start()
    try:
        yield gw
    finally:
        await gw.close()


async def bulk(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bytes:
    """SIZE bytes out and back through an echo, a slow reader at first (the relay must queue, not drop),
    then our EOF: the echo's EOF comes back."""
    payload = bytes(range(251)) * (SIZE // 251 + 1)
    payload = payload[:SIZE]

    async def send() -> None:
        for i in range(0, SIZE, 200_000):
            writer.write(payload[i:i + 200_000])
            await writer.drain()
        writer.write_eof()

    sender = asyncio.ensure_future(send())
    got = bytearray()
    while chunk := await asyncio.wait_for(reader.read(1 << 20), 5):
        if len(got) < SIZE // 2:
            await asyncio.sleep(0.003)
        got += chunk
    await sender
    writer.close()
    assert bytes(got) == payload
    return bytes(got[:64]) + bytes(got[-64:])


async def conversation(gw: Gateway, echo_port: int) -> list[Any]:
    http = ("127.0.0.1", gw.gateway_port("http"))
    status, reader, writer = await connect_tunnel(http, f"127.0.0.1:{echo_port}", basic("u", "pw"))
    assert status == 200
    out: list[Any] = [await bulk(reader, writer)]
    rep, _, reader, writer = await socks_connect(("127.0.0.1", gw.gateway_port("socks")), "127.0.0.1",
                                                 echo_port, "u", "pw")
    assert rep == 0
    out.append(await bulk(reader, writer))
    tunnels = gw.tunnels
    assert tunnels is not None
    for _ in range(200):
        if tunnels.stats()["connections"] == 0:
            break
        await asyncio.sleep(0.01)
    rows = [(r.service_id, r.requests, r.connections, r.bytes_up, r.bytes_down) for r in gw.meter.drain()]
    return [*out, sorted(rows)]


async def test_spliced_tunnels_relay_and_meter_as_copied_ones(tcp_echo: Any) -> None:
    results = {}
    for after in (1, 65536, 0):  # splice (almost) from the start, after 64 KiB, never
        async with gateway(after) as gw:
            results[after] = await conversation(gw, tcp_echo.port)
    assert results[1] == results[0] == results[65536]
    assert sum(r[3] for r in results[1][-1]) == 2 * SIZE
