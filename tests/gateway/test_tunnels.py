"""Tunnels through the C tunnel engine (uvloop runs) and the pure-Python path (asyncio runs): the same
bytes on the wire either way, including the awkward cases (pipelined handshakes, half-close,
backpressure, malformed greetings, refused connects)."""

import asyncio

import pytest

from .clients import basic, connect_tunnel, open_to, read_response, socks_connect

pytestmark = pytest.mark.anyio


async def wait_for(predicate, timeout: float = 3.0) -> None:
    end = asyncio.get_running_loop().time() + timeout
    while not predicate():
        assert asyncio.get_running_loop().time() < end, "condition not reached"
        await asyncio.sleep(0.01)


async def test_engine_serves_the_tunnel_listeners(env, origin, tunnel_path):
    status, reader, writer = await connect_tunnel(env.http, f"127.0.0.1:{origin.port}", basic("rot", "pw"))
    assert status == 200
    tunnels = env.gateway.tunnels
    if tunnel_path == "engine":
        assert tunnels is not None and tunnels.stats()["relays"] == 1
    else:
        assert tunnels is None
    writer.close()
    if tunnels is not None:
        await wait_for(lambda: tunnels.stats()["connections"] == 0)


async def test_connect_head_and_request_in_one_write(env, origin):
    reader, writer = await open_to(("127.0.1.1", env.static_http))
    auth = basic("alice", "secret")
    writer.write(f"CONNECT 127.0.0.1:{origin.port} HTTP/1.1\r\nProxy-Authorization: {auth}"
                 f"\r\n\r\nGET /early HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    assert (await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 3)).startswith(b"HTTP/1.1 200")
    status, _, body, _ = await read_response(reader)
    assert status == 200 and body.startswith(b"127.0.1.1 /early")
    writer.close()


async def test_socks5_whole_handshake_in_one_write(env, origin):
    reader, writer = await open_to(env.socks)
    login, password = b"rot", b"pw"
    writer.write(b"\x05\x01\x02" + bytes([1, len(login)]) + login + bytes([len(password)]) + password
                 + b"\x05\x01\x00\x01\x7f\x00\x00\x01" + origin.port.to_bytes(2, "big")
                 + b"GET /piped HTTP/1.1\r\nHost: x\r\n\r\n")
    assert await asyncio.wait_for(reader.readexactly(2), 3) == b"\x05\x02"
    assert await asyncio.wait_for(reader.readexactly(2), 3) == b"\x01\x00"
    reply = await asyncio.wait_for(reader.readexactly(10), 3)
    assert reply[:4] == b"\x05\x00\x00\x01" and reply[4:8] in {bytes([127, 0, 1, n]) for n in (3, 4, 5)}
    status, _, body, _ = await read_response(reader)
    assert status == 200 and b"/piped" in body
    writer.close()


async def test_half_close_passes_through(env, tcp_echo):
    status, reader, writer = await connect_tunnel(env.http, f"127.0.0.1:{tcp_echo.port}", basic("rot", "pw"))
    assert status == 200
    writer.write(b"last words")
    writer.write_eof()  # the echo server answers, then closes when it sees our EOF
    assert await asyncio.wait_for(reader.read(), 3) == b"last words"
    writer.close()


async def test_bulk_both_ways_with_backpressure_is_metered_exactly(env, tcp_echo):
    env.gateway.meter.drain()
    rep, _, reader, writer = await socks_connect(env.socks, "127.0.0.1", tcp_echo.port, "rot", "pw")
    assert rep == 0
    size = 8 * 1024 * 1024
    payload = bytes(range(256)) * (size // 256)

    async def send() -> None:
        for i in range(0, size, 256 * 1024):
            writer.write(payload[i:i + 256 * 1024])
            await writer.drain()
            await asyncio.sleep(0)

    sender = asyncio.ensure_future(send())
    got = bytearray()
    while len(got) < size:
        if len(got) < size // 2:
            await asyncio.sleep(0.002)  # a slow reader at first: the relay must hold back, not drop
        chunk = await asyncio.wait_for(reader.read(1 << 20), 5)
        assert chunk
        got += chunk
    await sender
    assert bytes(got) == payload
    writer.close()
    tunnels = env.gateway.tunnels
    if tunnels is not None:
        await wait_for(lambda: tunnels.stats()["connections"] == 0)
    else:
        await asyncio.sleep(0.1)
    rows = [r for r in env.gateway.meter.drain() if r.service_id == "rot1"]
    assert sum(r.bytes_up for r in rows) == size and sum(r.bytes_down for r in rows) == size
    assert sum(r.requests for r in rows) == 1 and sum(r.connections for r in rows) == 1


async def test_counts_reach_the_meter_while_the_tunnel_is_open(env, tcp_echo):
    env.gateway.meter.drain()
    status, reader, writer = await connect_tunnel(env.http, f"127.0.0.1:{tcp_echo.port}", basic("rot", "pw"))
    assert status == 200
    writer.write(b"x" * 1000)
    assert len(await asyncio.wait_for(reader.readexactly(1000), 3)) == 1000
    rows = [r for r in env.gateway.meter.drain() if r.service_id == "rot1"]
    assert sum(r.bytes_up for r in rows) == 1000 and sum(r.bytes_down for r in rows) == 1000
    writer.close()


@pytest.mark.parametrize("greeting", [b"\x05\x00", b"\x04\x01\x00\x50"])
async def test_malformed_greeting_is_closed_without_reply(env, greeting):
    reader, writer = await open_to(env.socks)
    writer.write(greeting)
    assert await asyncio.wait_for(reader.read(), 3) == b""
    writer.close()


async def test_bad_auth_version_and_bad_request_version(env):
    reader, writer = await open_to(env.socks)
    writer.write(b"\x05\x01\x02\x02\x03rot\x02pw")
    assert await asyncio.wait_for(reader.read(), 3) == b"\x05\x02\x01\x01"
    writer.close()
    reader, writer = await open_to(env.socks)
    writer.write(b"\x05\x01\x02\x01\x03rot\x02pw\x04\x01\x00\x01\x7f\x00\x00\x01\x00\x50")
    assert await asyncio.wait_for(reader.read(), 3) == b"\x05\x02\x01\x00\x05\x01\x00\x01" + bytes(6)
    writer.close()
    assert env.gateway.ctx.unattributed_errors["protocol"] >= 1


async def test_refused_connect_replies_and_frees_the_slot(env):
    with __import__("socket").socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    status, _, writer = await connect_tunnel(env.http, f"127.0.0.1:{port}", basic("lim", "pw"))
    assert status == 502
    writer.close()
    rep, _, _, writer = await socks_connect(env.socks, "127.0.0.1", port, "lim", "pw")
    assert rep == 5
    writer.close()
    await wait_for(lambda: env.gateway.limiter.current("limited") == 0)


async def test_plain_requests_after_handover_keep_alive(env, origin):
    reader, writer = await open_to(env.http)
    for path in ("/one", "/two"):
        writer.write(f"GET http://127.0.0.1:{origin.port}{path} HTTP/1.1\r\nHost: x\r\n"
                     f"Proxy-Authorization: {basic('rot', 'pw')}\r\n\r\n".encode())
        status, _, body, _ = await read_response(reader)
        assert status == 200 and path.encode() in body
    assert not reader.at_eof()  # the same client connection served both (rotating: exits may differ)
    writer.close()


async def test_connection_on_a_closed_listener_gets_no_tunnel(env, origin):
    reader, writer = await open_to(("127.0.1.1", env.static_http))
    env.table.remove("static1")  # the static listeners on its IPs close
    await wait_for(lambda: "127.0.1.1" not in env.gateway.static_ips())
    writer.write(f"CONNECT 127.0.0.1:{origin.port} HTTP/1.1\r\n"
                 f"Proxy-Authorization: {basic('alice', 'secret')}\r\n\r\n".encode())
    answer = await asyncio.wait_for(reader.read(), 3)
    assert not answer.startswith(b"HTTP/1.1 200")  # closed (engine) or 407 (Python path)
    writer.close()


def mutated_handshakes(port: int, seed: int, count: int) -> list[tuple[str, bytes]]:
    """Valid CONNECT / SOCKS5 handshakes cut, flipped, extended and shuffled, plus random bytes."""
    import random

    rng = random.Random(seed)
    socks = (b"\x05\x02\x00\x02" + b"\x01\x03rot\x02pw" + b"\x05\x01\x00\x03\x09127.0.0.1"
             + port.to_bytes(2, "big") + b"\x05\x01\x00\x04" + bytes(15) + b"\x01\x00\x50")
    connect = (f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\nProxy-Authorization: {basic('rot', 'pw')}\r\n"
               f"X: {'y' * 50}\r\n\r\nGET / HTTP/1.1\r\n\r\n").encode()
    cases = []
    for _ in range(count):
        kind = rng.choice(["socks", "http"])
        data = bytearray(socks if kind == "socks" else connect)
        for _ in range(rng.randint(0, 4)):
            op = rng.random()
            pos = rng.randrange(len(data) + 1)
            if op < 0.3:
                del data[pos:]
            elif op < 0.6 and data:
                data[min(pos, len(data) - 1)] = rng.randrange(256)
            elif op < 0.8:
                data[pos:pos] = rng.randbytes(rng.randint(1, 300))
            else:
                data = bytearray(rng.randbytes(rng.randint(1, 2000)))
        cases.append((kind, bytes(data)))
    return cases


async def test_malformed_input_never_hurts_other_connections(env, origin):
    async def sink(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:  # tunnels that open lead here: swallow whatever arrives
            while await reader.read(65536):
                pass
        except ConnectionError:
            pass
        writer.close()

    sink_server = await asyncio.start_server(sink, "127.0.0.1", 0)
    sink_port = sink_server.sockets[0].getsockname()[1]

    async def poke(kind: str, data: bytes) -> None:
        reader, writer = await open_to(env.socks if kind == "socks" else env.http)
        for i in range(0, len(data), 7 if len(data) % 2 else len(data) or 1):  # in pieces or whole
            writer.write(data[i:i + (7 if len(data) % 2 else len(data))])
        try:
            await asyncio.wait_for(reader.read(65536), 0.3)
        except (TimeoutError, ConnectionError):
            pass
        writer.close()

    cases = mutated_handshakes(sink_port, seed=9, count=300)
    for i in range(0, len(cases), 25):
        await asyncio.gather(*(poke(kind, data) for kind, data in cases[i:i + 25]))
        status, reader, writer = await connect_tunnel(env.http, f"127.0.0.1:{origin.port}",
                                                      basic("rot", "pw"))
        assert status == 200
        writer.close()
    rep, _, reader, writer = await socks_connect(env.socks, "127.0.0.1", origin.port, "rot", "pw")
    assert rep == 0
    writer.close()
    tunnels = env.gateway.tunnels
    if tunnels is not None:  # every poked connection ended (none left waiting on a decision)
        await wait_for(lambda: tunnels.stats()["connections"] == 0, timeout=5)
    await wait_for(lambda: env.gateway.limiter.current("rot1") == 0, timeout=5)
    sink_server.close()
