"""Service state seen by the gateway: disable, sticky sessions, geo, limits, metering."""

import asyncio
import dataclasses

import pytest

from proxyplane.gateway.metering import UsageRow

from .clients import basic, connect_tunnel, http_get, open_to, read_response, request, socks_connect
from .conftest import ROTATING_IPS

pytestmark = pytest.mark.anyio


async def exit_ip(env, origin, username: str) -> str:
    status, _, body = await http_get(env.http, f"http://127.0.0.1:{origin.port}/", basic(username, "pw"))
    assert status == 200, body
    return body.split()[0].decode()


async def test_disabled_service_refused_at_once(env, origin):
    url = f"http://127.0.0.1:{origin.port}/"
    reader, writer = await open_to(("127.0.1.1", env.static_http))
    writer.write(request(url, basic("alice", "secret")))
    assert (await read_response(reader))[0] == 200
    entry = env.table.get("static1")
    env.table.upsert(dataclasses.replace(entry, active=False))
    writer.write(request(url, basic("alice", "secret")))  # same keep-alive connection
    assert (await read_response(reader))[0] == 403
    writer.close()
    rep, _, _, w2 = await socks_connect(("127.0.1.1", env.static_socks), "127.0.0.1", origin.port,
                                        "alice", "secret")
    assert rep == "auth-failed"
    w2.close()
    env.table.upsert(dataclasses.replace(entry, password="rotated"))
    assert (await http_get(("127.0.1.1", env.static_http), url, basic("alice", "secret")))[0] == 407
    assert (await http_get(("127.0.1.1", env.static_http), url, basic("alice", "rotated")))[0] == 200


async def test_rotating_spreads_and_sticky_keeps_until_rotated(env, origin):
    seen = {await exit_ip(env, origin, "rot") for _ in range(24)}
    assert len(seen) > 1 and seen <= set(ROTATING_IPS)
    first = await exit_ip(env, origin, "rot-session-abc-ttl-5m")
    for _ in range(5):
        assert await exit_ip(env, origin, "rot-session-abc-ttl-5m") == first
    [session] = env.gateway.router.list_sessions("rot1")
    assert (session.sid, session.exit_ip) == ("abc", first) and session.expires - session.started == 300
    rotated = env.gateway.router.rotate(env.table.get("rot1"), "abc")
    assert rotated is not None and rotated.exit_ip != first
    assert await exit_ip(env, origin, "rot-session-abc-ttl-5m") == rotated.exit_ip
    assert env.gateway.router.delete("rot1", "abc") and env.gateway.router.list_sessions("rot1") == []
    await exit_ip(env, origin, "rot-session-x")
    await exit_ip(env, origin, "rot-session-y")
    assert env.gateway.router.purge("rot1") == 2


async def test_sticky_mode_and_pinned(env, origin):
    entry = env.table.get("rot1")
    env.table.upsert(dataclasses.replace(entry, session_mode="sticky"))
    ips = {await exit_ip(env, origin, "rot") for _ in range(6)}
    assert len(ips) == 1
    env.table.upsert(dataclasses.replace(entry, session_mode="pinned", pin="127.0.1.4"))
    assert {await exit_ip(env, origin, "rot") for _ in range(4)} == {"127.0.1.4"}


async def test_country_choice(env, origin):
    assert {await exit_ip(env, origin, "rot-country-us") for _ in range(5)} == {"127.0.1.5"}
    assert {await exit_ip(env, origin, "rot-country-de") for _ in range(8)} <= {"127.0.1.3", "127.0.1.4"}
    url = f"http://127.0.0.1:{origin.port}/"
    status, _, body = await http_get(env.http, url, basic("rot-country-fr", "pw"))
    assert status == 502 and b"country fr" in body


async def test_concurrency_limit(env, tcp_echo):
    target = f"127.0.0.1:{tcp_echo.port}"
    auth = basic("lim", "pw")
    tunnels = [await connect_tunnel(env.http, target, auth) for _ in range(2)]
    assert [t[0] for t in tunnels] == [200, 200]
    status, _, w3 = await connect_tunnel(env.http, target, auth)
    assert status == 429
    w3.close()
    rep, _, _, w4 = await socks_connect(env.socks, "127.0.0.1", tcp_echo.port, "lim", "pw")
    assert rep == 2
    w4.close()
    assert env.gateway.limiter.current("limited") == 2
    tunnels[0][2].close()
    for _ in range(100):
        if env.gateway.limiter.current("limited") < 2:
            break
        await asyncio.sleep(0.01)
    status, _, w5 = await connect_tunnel(env.http, target, auth)
    assert status == 200
    w5.close()
    tunnels[1][2].close()


async def test_metering_counts_equal_bytes(env, origin, tcp_echo):
    payload = b"z" * 200_000
    status, reader, writer = await connect_tunnel(env.http, f"127.0.0.1:{tcp_echo.port}", basic("rot", "pw"))
    assert status == 200
    writer.write(payload)
    assert await asyncio.wait_for(reader.readexactly(len(payload)), 3) == payload
    writer.write_eof()  # half-close: the echo server ends, the relay closes both sides
    assert await asyncio.wait_for(reader.read(), 3) == b""
    writer.close()
    reader, writer = await open_to(env.http)
    received = 0
    for path in ("/a", "/b", "/big?n=100000"):
        raw = request(f"http://127.0.0.1:{origin.port}{path}", basic("rot", "pw"))
        writer.write(raw)
        received += len((await read_response(reader))[3])
    writer.close()
    await asyncio.sleep(0.05)
    flushed: list[UsageRow] = []

    async def sink(rows: list[UsageRow]) -> None:
        flushed.extend(rows)

    assert await env.gateway.meter.flush(sink) > 0
    echo_rows = [r for r in flushed if r.service_id == "rot1" and r.host == "127.0.0.1"]
    assert sum(r.bytes_up for r in echo_rows) == len(payload) + origin.bytes_in
    assert sum(r.bytes_down for r in echo_rows) == len(payload) + received
    assert sum(r.requests for r in echo_rows) == 4
    assert sum(r.connections for r in echo_rows) == 2
    assert await env.gateway.meter.flush(sink) == 0  # drained


async def test_failed_flush_keeps_rows(env, origin):
    await exit_ip(env, origin, "rot")

    async def broken(rows):
        raise RuntimeError("store down")

    with pytest.raises(RuntimeError):
        await env.gateway.meter.flush(broken)
    got: list[UsageRow] = []

    async def ok(rows):
        got.extend(rows)

    await env.gateway.meter.flush(ok)
    assert sum(r.requests for r in got) == 1
