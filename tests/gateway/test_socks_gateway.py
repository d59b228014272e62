import asyncio

import pytest

from proxyplane.gateway.access import ServiceEntry
from proxyplane.gateway.protocol.udp import build_udp_datagram, parse_udp_datagram

from .clients import read_response, socks_connect
from .conftest import has_ipv6

pytestmark = pytest.mark.anyio


async def fetch_over(reader, writer, path: str) -> bytes:
    writer.write(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    return (await read_response(reader))[2]


@pytest.mark.parametrize("target", ["127.0.0.1", "localhost"])
async def test_socks5_static_ipv4_and_domain(env, origin, target):
    rep, bound, reader, writer = await socks_connect(("127.0.1.2", env.static_socks), target, origin.port,
                                                     "alice", "secret")
    assert rep == 0 and bound[0] == "127.0.1.2"
    assert (await fetch_over(reader, writer, "/s")).startswith(b"127.0.1.2 /s")
    writer.close()


async def test_socks5_ipv6_destination(env, origin):
    if not has_ipv6():
        pytest.skip("no IPv6 loopback")
    env.table.upsert(ServiceEntry("v6", "rotating", "six", "pw", exit_ips={"::1": "us"}))
    rep, _, reader, writer = await socks_connect(env.socks, "::1", origin.port, "six", "pw")
    assert rep == 0
    assert (await fetch_over(reader, writer, "/v6")).startswith(b"::1 /v6")
    writer.close()
    rep, _, _, writer = await socks_connect(env.socks, "127.0.0.1", origin.port, "six", "pw")
    assert rep == 8  # no IPv4 exit for an IPv4 destination
    writer.close()


async def test_socks5_sniffed_on_http_port(env, origin):
    rep, _, reader, writer = await socks_connect(("127.0.1.1", env.static_http), "127.0.0.1", origin.port,
                                                 "alice", "secret")
    assert rep == 0 and (await fetch_over(reader, writer, "/sniff")).startswith(b"127.0.1.1 /sniff")
    writer.close()


async def test_socks5_refusals_and_whitelist(env, origin):
    static = ("127.0.1.1", env.static_socks)
    rep, _, _, writer = await socks_connect(static, "127.0.0.1", origin.port, "alice", "bad")
    assert rep == "auth-failed"
    writer.close()
    rep, _, _, writer = await socks_connect(static, "127.0.0.1", origin.port)  # no auth, not whitelisted
    assert rep == "no-method"
    writer.close()
    rep, _, reader, writer = await socks_connect(static, "127.0.0.1", origin.port, source="127.0.2.1")
    assert rep == 0 and (await fetch_over(reader, writer, "/wl")).startswith(b"127.0.1.1 /wl")
    writer.close()
    rep, _, _, writer = await socks_connect(env.socks, "127.0.0.1", origin.port, "rot-country-zz", "pw")
    assert rep == "auth-failed"
    writer.close()
    closed_port = origin.port + 1 if origin.port < 65535 else origin.port - 1
    rep, _, _, writer = await socks_connect(static, "127.0.0.1", closed_port, "alice", "secret")
    assert rep == 5  # connection refused
    writer.close()


async def test_udp_associate(env, udp_echo):
    rep, bound, reader, writer = await socks_connect(("127.0.1.1", env.static_socks), "0.0.0.0", 0,
                                                     "alice", "secret", command=3)
    assert rep == 0 and bound[0] == "127.0.1.1"
    loop = asyncio.get_running_loop()
    inbox: asyncio.Queue[bytes] = asyncio.Queue()

    class Client(asyncio.DatagramProtocol):
        def datagram_received(self, data, addr):
            inbox.put_nowait(data)

    transport, _ = await loop.create_datagram_endpoint(Client, local_addr=("127.0.0.1", 0))
    try:
        for payload in (b"one", b"two!"):
            transport.sendto(build_udp_datagram("127.0.0.1", udp_echo.port, payload), bound)
            dgram = parse_udp_datagram(await asyncio.wait_for(inbox.get(), 3))
            assert (dgram.host, dgram.port, dgram.payload) == ("127.0.0.1", udp_echo.port, b"echo:" + payload)
    finally:
        transport.close()
    assert udp_echo.peers == ["127.0.1.1", "127.0.1.1"]
    writer.close()
    await asyncio.sleep(0.05)
    rows = [r for r in env.gateway.meter.drain() if r.service_id == "static1" and r.host == "127.0.0.1"]
    assert sum(r.bytes_up for r in rows) == 7 and sum(r.bytes_down for r in rows) == 17


async def test_udp_refused_without_addon(env):
    rep, _, _, writer = await socks_connect(env.socks, "0.0.0.0", 0, "rot", "pw", command=3)
    assert rep == 2
    writer.close()
