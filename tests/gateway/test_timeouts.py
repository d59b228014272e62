"""Timeouts kept by one periodic sweep (deadlines.py): SOCKS5 handshake, upstream connect, tunnel idle."""

import asyncio
import socket

import pytest

from proxyplane.gateway.access import AccessTable
from proxyplane.gateway.context import Settings
from proxyplane.gateway.deadlines import Deadlines
from proxyplane.gateway.server import Gateway, GatewayConfig

from .clients import basic, open_to, read_response, request
from .conftest import services

pytestmark = pytest.mark.anyio


class Thing:
    def __init__(self, log: list[str], name: str) -> None:
        self.log, self.name = log, name

    def expire(self) -> None:
        self.log.append(self.name)


def test_deadlines_fire_late_never_early_and_can_be_removed():
    now = [100.2]
    deadlines = Deadlines(clock=lambda: now[0])
    log: list[str] = []
    a, b, c = Thing(log, "a"), Thing(log, "b"), Thing(log, "c")
    deadlines.add(a, 1.0)
    slot_b = deadlines.add(b, 1.0)
    deadlines.add(c, 3.0)
    deadlines.remove(b, slot_b)
    now[0] = 101.1  # 0.9 s later: not yet
    assert deadlines.sweep() == 0 and log == []
    now[0] = 102.0
    assert deadlines.sweep() == 1 and log == ["a"]
    now[0] = 110.0
    assert deadlines.sweep() == 1 and log == ["a", "c"] and len(deadlines) == 0


@pytest.fixture
async def quick():
    settings = Settings(connect_timeout=0.5, handshake_timeout=0.5, idle_timeout=0.5, sweep_interval=0.05,
                        allow_loopback=True)
    config = GatewayConfig(gateway_host="127.0.0.1", gateway_http_port=0, gateway_socks_port=0)
    gateway = Gateway(AccessTable(services()), config, settings=settings)
    await gateway.start()
    yield gateway
    await gateway.close()


async def closed_within(reader: asyncio.StreamReader, seconds: float) -> bool:
    try:
        return await asyncio.wait_for(reader.read(), seconds) == b""
    except (TimeoutError, ConnectionError):
        return False


async def test_socks5_handshake_timeout(quick):
    reader, writer = await open_to(("127.0.0.1", quick.gateway_port("socks")))
    writer.write(b"\x05\x01\x02")  # greeting only, then silence
    assert await reader.readexactly(2) == b"\x05\x02"
    assert await closed_within(reader, 3.0)
    assert quick.ctx.unattributed_errors["handshake_timeout"] == 1
    writer.close()


async def test_idle_tunnel_is_closed_and_its_slot_released(quick, origin):
    reader, writer = await open_to(("127.0.0.1", quick.gateway_port("http")))
    writer.write(f"CONNECT 127.0.0.1:{origin.port} HTTP/1.1\r\nProxy-Authorization: {basic('rot', 'pw')}"
                 "\r\n\r\n".encode())
    assert (await reader.readuntil(b"\r\n\r\n")).startswith(b"HTTP/1.1 200")
    # traffic keeps it open past the idle timeout
    for i in range(3):
        writer.write(f"GET /t{i} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        assert (await read_response(reader))[0] == 200
        await asyncio.sleep(0.4)
    assert quick.limiter.current("rot1") == 1
    assert await closed_within(reader, 4.0)
    await asyncio.sleep(0.05)
    assert quick.limiter.current("rot1") == 0
    rows = quick.meter.drain()
    assert sum(r.requests for r in rows if r.service_id == "rot1") == 1
    assert sum(r.bytes_up for r in rows if r.service_id == "rot1") > 0
    writer.close()


async def test_connect_timeout_answers_504(quick):
    # a listener whose accept queue is full drops further SYNs: the connect hangs until our timeout
    with socket.socket() as full:
        full.bind(("127.0.0.1", 0))
        full.listen(0)
        port = full.getsockname()[1]
        fillers = []
        for _ in range(4):
            s = socket.socket()
            s.setblocking(False)
            try:
                s.connect(("127.0.0.1", port))
            except BlockingIOError:
                pass
            fillers.append(s)
        await asyncio.sleep(0.1)
        reader, writer = await open_to(("127.0.0.1", quick.gateway_port("http")))
        writer.write(f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\nProxy-Authorization: {basic('rot', 'pw')}"
                     "\r\n\r\n".encode())
        status, _, _, _ = await asyncio.wait_for(read_response(reader), 4.0)
        assert status == 504
        await asyncio.sleep(0.05)
        assert quick.limiter.current("rot1") == 0
        rows = quick.meter.drain()
        assert sum(r.errors.get("timeout", 0) for r in rows if r.service_id == "rot1") == 1
        writer.close()
        for s in fillers:
            s.close()


async def test_http_request_head_trickled_slowly_is_cut_off(quick):
    """Slowloris: header lines keep arriving, but the head never completes within handshake_timeout."""
    reader, writer = await open_to(("127.0.0.1", quick.gateway_port("http")))
    loop = asyncio.get_running_loop()
    start = loop.time()
    writer.write(b"GET http://127.0.0.1:9/ HTTP/1.1\r\n")
    got = b""
    while loop.time() - start < 5.0:
        try:
            writer.write(b"X-Slow: 1\r\n")
            got += await asyncio.wait_for(reader.read(4096), 0.2)
        except TimeoutError:
            continue
        except ConnectionError:
            break
        if reader.at_eof():
            break
    assert got.startswith(b"HTTP/1.1 408"), got
    assert loop.time() - start < 3.0  # 0.5 s timeout + one 1 s bucket + sweep
    assert quick.ctx.unattributed_errors["head_timeout"] == 1
    writer.close()


async def test_http_connection_that_never_sends_a_request_is_closed(quick):
    reader, writer = await open_to(("127.0.0.1", quick.gateway_port("http")))
    assert await closed_within(reader, 3.0)
    assert quick.ctx.unattributed_errors["head_timeout"] == 1
    writer.close()


async def test_http_keep_alive_idle_timeout_closes_and_releases_the_slot(quick, origin):
    reader, writer = await open_to(("127.0.0.1", quick.gateway_port("http")))
    url = f"http://127.0.0.1:{origin.port}"
    # requests closer together than the idle timeout keep the connection open
    for i in range(4):
        writer.write(request(f"{url}/k{i}", basic("rot", "pw")))
        assert (await read_response(reader))[0] == 200
        await asyncio.sleep(0.3)
    assert quick.limiter.current("rot1") == 1
    assert await closed_within(reader, 3.0)
    await asyncio.sleep(0.05)
    assert quick.limiter.current("rot1") == 0
    assert quick.ctx.unattributed_errors["head_timeout"] == 0  # an idle keep-alive close is no error
    rows = quick.meter.drain()
    assert sum(r.requests for r in rows if r.service_id == "rot1") == 4
    assert not any(r.errors for r in rows if r.service_id == "rot1")
    writer.close()


async def test_http_request_without_upstream_progress_is_ended(quick):
    """An origin that accepts the request and never answers: 504 after a whole idle window."""
    silent: list[asyncio.StreamWriter] = []

    async def hold(_reader: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        silent.append(w)

    server = await asyncio.start_server(hold, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    reader, writer = await open_to(("127.0.0.1", quick.gateway_port("http")))
    writer.write(request(f"http://127.0.0.1:{port}/never", basic("rot", "pw")))
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5.0)
    assert head.startswith(b"HTTP/1.1 504")
    await asyncio.sleep(0.05)
    assert quick.limiter.current("rot1") == 0
    rows = quick.meter.drain()
    assert sum(r.errors.get("idle_timeout", 0) for r in rows if r.service_id == "rot1") == 1
    writer.close()
    for w in silent:
        w.close()
    server.close()
