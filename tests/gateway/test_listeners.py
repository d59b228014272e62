"""Static listeners: one wildcard socket per port serves every exit IP (the exit IP is the address the client
dialed), beside the rotating gateway on the same port (SO_REUSEPORT: the most specific bound address wins);
a local address that is no exit IP is refused. Both tunnel paths (C engine and Python)."""

from __future__ import annotations

import socket

import pytest

from proxyplane.gateway.access import AccessTable
from proxyplane.gateway.context import Settings
from proxyplane.gateway.server import Gateway, GatewayConfig

from .clients import basic, connect_tunnel, http_get, socks_connect
from .conftest import STATIC_IPS, free_port, services

pytestmark = pytest.mark.anyio


def listening_sockets() -> int:
    """TCP sockets in LISTEN state held by this process (/proc/self/fd against /proc/net/tcp{,6})."""
    import os

    inodes = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                rows = f.readlines()[1:]
        except OSError:
            continue
        for row in rows:
            cols = row.split()
            if cols[3] == "0A" and cols[9] in inodes:
                count += 1
    return count


async def test_static_and_rotating_share_a_port(origin):
    """Rotating SOCKS5 on 127.0.0.1:P and static SOCKS5 on 0.0.0.0:P at once: each gets its own clients."""
    port = free_port(["127.0.0.1", *STATIC_IPS])
    table = AccessTable(services())
    before = listening_sockets()
    config = GatewayConfig(gateway_host="127.0.0.1", gateway_socks_port=port, static_socks_port=port,
                           static_http_port=0, static_bind=("0.0.0.0",))
    gateway = Gateway(table, config, settings=Settings(allow_loopback=True))
    await gateway.start()
    try:
        assert listening_sockets() - before == 3  # rotating socks, static socks, static http
        assert gateway.static_port("127.0.1.2", "socks") == port == gateway.gateway_port("socks")
        for exit_ip in STATIC_IPS:  # static: the origin sees the address the client dialed
            rep, _, reader, writer = await socks_connect((exit_ip, port), "127.0.0.1", origin.port,
                                                         "alice", "secret")
            assert rep == 0
            writer.write(b"GET /s HTTP/1.1\r\nHost: x\r\n\r\n")
            assert (await reader.readuntil(b"\r\n\r\n")).startswith(b"HTTP/1.1 200")
            writer.close()
            assert origin.seen[-1][0] == exit_ip
        # rotating: 127.0.0.1:P is the gateway listener (alice's static credentials are unknown there)
        gw = ("127.0.0.1", port)
        rep, _, reader, writer = await socks_connect(gw, "127.0.0.1", origin.port, "rot", "pw")
        assert rep == 0
        writer.close()
        rep, *_rest, writer = await socks_connect(("127.0.0.1", port), "127.0.0.1", origin.port,
                                                  "alice", "secret")
        assert rep != 0
        writer.close()
        # HTTP static port (port 0: one ephemeral port for every exit IP)
        http_port = gateway.static_port("127.0.1.1", "http")
        for exit_ip in STATIC_IPS:
            status, _, body = await http_get((exit_ip, http_port), f"http://127.0.0.1:{origin.port}/h",
                                             basic("alice", "secret"))
            assert status == 200 and body.split()[0].decode() == exit_ip
    finally:
        await gateway.close()
    assert listening_sockets() == before


async def test_local_address_that_is_no_exit_ip_is_refused(env, origin):
    """127.0.9.9 is local (127.0.0.0/8) but no service's exit IP: no service answers there."""
    status, _, _ = await http_get(("127.0.9.9", env.static_http), f"http://127.0.0.1:{origin.port}/",
                                  basic("alice", "secret"))
    assert status == 407
    status, _, writer = await connect_tunnel(("127.0.9.9", env.static_http), f"127.0.0.1:{origin.port}",
                                             basic("alice", "secret"))
    assert status == 407
    writer.close()
    rep, *_rest, writer = await socks_connect(("127.0.9.9", env.static_socks), "127.0.0.1", origin.port,
                                              "alice", "secret")
    assert rep != 0
    writer.close()
    # whitelisted client without credentials: the whitelist is per exit IP, so nothing matches either
    status, _, _ = await http_get(("127.0.9.9", env.static_http), f"http://127.0.0.1:{origin.port}/",
                                  source="127.0.2.1")
    assert status == 407
    status, _, body = await http_get(("127.0.1.1", env.static_http), f"http://127.0.0.1:{origin.port}/",
                                     source="127.0.2.1")
    assert status == 200 and body.split()[0] == b"127.0.1.1"
    assert all(peer != "127.0.9.9" for peer, _, _ in origin.seen)


def test_reuseport_is_set_on_engine_listeners():
    from proxyplane.gateway import tunnels

    if not tunnels.available():
        pytest.skip("the C tunnel engine is not built")
    from proxyplane.gateway.access import AccessTable as Table
    from proxyplane.gateway.context import Context
    from proxyplane.gateway.limits import ConnectionLimiter
    from proxyplane.gateway.metering import Meter
    from proxyplane.gateway.routing import Router

    ctx = Context(Table(), Router(), ConnectionLimiter(), Meter(), Settings())
    engine = tunnels.TunnelEngine(ctx, lambda kind, static: None)  # type: ignore[arg-type,return-value]
    listener = engine.listen("0.0.0.0", 0, "http", True, 16)
    try:
        sock = listener.sockets[0]
        assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT) == 1
        assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR) == 1
    finally:
        listener.close()
