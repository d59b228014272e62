"""Destination deny-list: private, link-local and metadata ranges refused (loopback only with the development
setting), checked on the address connected to, i.e. after DNS resolution; on HTTP, CONNECT and SOCKS5."""

from __future__ import annotations

import asyncio

import pytest

from proxyplane.gateway.access import AccessTable
from proxyplane.gateway.context import Settings
from proxyplane.gateway.destinations import DEFAULT_DENY, DestinationPolicy, deny_list
from proxyplane.gateway.protocol.udp import build_udp_datagram
from proxyplane.gateway.server import Gateway, GatewayConfig

from .clients import basic, connect_tunnel, http_get, socks_connect
from .conftest import STATIC_IPS, free_port, services

pytestmark = pytest.mark.anyio


def test_default_policy_refuses_internal_ranges_and_loopback_unless_allowed():
    policy = DestinationPolicy()
    for address in (
        "169.254.169.254",
        "10.1.2.3",
        "172.16.0.1",
        "172.31.255.254",
        "192.168.0.1",
        "100.64.0.1",
        "0.0.0.0",
        "224.0.0.1",
        "255.255.255.255",
        "fd00:ec2::254",
        "fe80::1",
        "::ffff:10.0.0.1",
        "::ffff:169.254.169.254",
        "127.0.0.1",
        "127.9.9.9",
        "::1",
        "::",
        "not-an-ip",
    ):
        assert not policy.allowed(address), address
    for address in ("8.8.8.8", "172.32.0.1", "192.169.0.1", "2001:4860:4860::8888", "::ffff:8.8.8.8"):
        assert policy.allowed(address), address
    dev = DestinationPolicy(allow_loopback=True)
    assert dev.allowed("127.0.0.1") and dev.allowed("127.0.1.7") and dev.allowed("::1")
    assert not dev.allowed("169.254.169.254") and not dev.allowed("10.0.0.1")


def test_deny_list_setting():
    assert deny_list("default") == DEFAULT_DENY
    assert deny_list("default, 198.51.100.7") == (*DEFAULT_DENY, "198.51.100.7/32")
    assert deny_list("10.0.0.0/8") == ("10.0.0.0/8",)
    with pytest.raises(ValueError):
        deny_list("default,10.0.0.300/8")


async def _gateway(**settings) -> Gateway:
    config = GatewayConfig(gateway_host="127.0.0.1", gateway_http_port=0, gateway_socks_port=0)
    gateway = Gateway(AccessTable(services()), config, settings=Settings(connect_timeout=3.0, **settings))
    await gateway.start()
    return gateway


async def test_loopback_destinations_refused_without_the_development_setting(origin):
    gateway = await _gateway()
    try:
        http = ("127.0.0.1", gateway.gateway_port("http"))
        socks = ("127.0.0.1", gateway.gateway_port("socks"))
        auth = basic("rot", "pw")
        status, _, body = await http_get(http, f"http://127.0.0.1:{origin.port}/x", auth)
        assert status == 403 and b"not allowed" in body
        # a DNS name is judged by the address it resolves to
        status, _, _ = await http_get(http, f"http://localhost:{origin.port}/x", auth)
        assert status == 403
        status, _, writer = await connect_tunnel(http, f"127.0.0.1:{origin.port}", auth)
        assert status == 403
        writer.close()
        rep, _, _, writer = await socks_connect(socks, "127.0.0.1", origin.port, "rot", "pw")
        assert rep == 2  # connection not allowed by ruleset
        writer.close()
        rep, _, _, writer = await socks_connect(socks, "localhost", origin.port, "rot", "pw")
        assert rep == 2
        writer.close()
        assert origin.seen == [] and origin.connections == 0
        rows = gateway.meter.drain()
        assert sum(r.errors.get("blocked", 0) for r in rows if r.service_id == "rot1") == 5
    finally:
        await gateway.close()


async def test_development_setting_lets_loopback_through_but_not_an_explicit_deny(origin):
    gateway = await _gateway(allow_loopback=True)
    try:
        http = ("127.0.0.1", gateway.gateway_port("http"))
        status, _, body = await http_get(http, f"http://localhost:{origin.port}/ok", basic("rot", "pw"))
        assert status == 200 and body.split()[1] == b"/ok"
    finally:
        await gateway.close()
    gateway = await _gateway(allow_loopback=True, deny_destinations=(*DEFAULT_DENY, "127.0.0.1/32"))
    try:
        http = ("127.0.0.1", gateway.gateway_port("http"))
        status, _, _ = await http_get(http, f"http://localhost:{origin.port}/no", basic("rot", "pw"))
        assert status == 403
        assert not any(path == "/no" for _, _, path in origin.seen)
    finally:
        await gateway.close()


async def test_udp_datagrams_to_denied_destinations_are_dropped(udp_echo):
    config = GatewayConfig(gateway_host=None, static_socks_port=free_port(list(STATIC_IPS)))
    gateway = Gateway(AccessTable(services()), config, settings=Settings())
    await gateway.start()
    loop = asyncio.get_running_loop()
    try:
        socks = ("127.0.1.1", gateway.static_port("127.0.1.1", "socks"))
        rep, bound, _, writer = await socks_connect(socks, "0.0.0.0", 0, "alice", "secret", command=3)
        assert rep == 0
        transport, _ = await loop.create_datagram_endpoint(
            asyncio.DatagramProtocol, local_addr=("127.0.0.1", 0)
        )
        try:
            transport.sendto(build_udp_datagram("127.0.0.1", udp_echo.port, b"literal"), bound)
            transport.sendto(build_udp_datagram("localhost", udp_echo.port, b"resolved"), bound)
            deadline, blocked = loop.time() + 3.0, 0
            while blocked < 2:  # both refused (counted) within a bounded wait
                assert loop.time() < deadline, "the datagrams were not refused"
                await asyncio.sleep(0.02)
                rows = gateway.meter.drain()
                blocked += sum(r.errors.get("blocked", 0) for r in rows if r.service_id == "static1")
        finally:
            transport.close()
        writer.close()
        assert udp_echo.peers == []
    finally:
        await gateway.close()


def test_own_listeners_refused_on_every_local_address_and_the_exact_remote_ones():
    dev = DestinationPolicy(allow_loopback=True)
    dev.add_own([("127.0.0.1", 8000), ("0.0.0.0", 3128), ("198.51.100.9", 5432)])
    for address in ("127.0.0.1", "127.0.0.9", "::1", "::ffff:127.0.0.1", "0.0.0.0", "::", "64:ff9b::7f00:1"):
        assert not dev.permits(address, 8000) and not dev.permits(address, 3128), address
    assert dev.permits("127.0.0.1", 8001) and dev.permits("::1", 8001)
    assert dev.permits("8.8.8.8", 3128)  # not this host: another proxy on the internet is fine
    assert not dev.permits("198.51.100.9", 5432)  # the database, wherever it is
    assert not dev.permits("not-an-ip", 8001)
    dev.allow("127.0.0.1", 3128)  # never over an own listener
    assert not dev.permits("127.0.0.1", 3128)


def test_an_exact_allowance_opens_one_address_and_port_only():
    policy = DestinationPolicy(allow_exact=[("127.0.0.1", 8090)])
    assert policy.permits("127.0.0.1", 8090) and policy.permits("::ffff:127.0.0.1", 8090)
    assert not policy.permits("127.0.0.1", 8091) and not policy.permits("127.0.0.2", 8090)
    assert not policy.permits("64:ff9b::a00:1", 80)  # NAT64 of 10.0.0.1


def test_platform_listeners_from_the_settings():
    from proxyplane.core.gateway_settings import GatewaySettings
    from proxyplane.core.settings import Settings as Core
    from proxyplane.gateway.destinations import endpoint
    from proxyplane.gateway.own_listeners import database_listeners, platform_listeners

    assert endpoint("127.0.0.1:8090") == ("127.0.0.1", 8090) and endpoint("[::1]:1") == ("::1", 1)
    with pytest.raises(ValueError):
        endpoint("localhost:80")
    assert database_listeners("sqlite+aiosqlite:////tmp/x.db") == []
    assert database_listeners("postgresql+asyncpg://u:p@127.0.0.1/db") == [
        ("0.0.0.0", 5432),
        ("127.0.0.1", 5432),
    ]
    assert database_listeners("postgresql://u@localhost:6543/db")[0] == ("0.0.0.0", 6543)
    gw = GatewaySettings(metrics_port=9300, https_port=-1, static_bind="0.0.0.0")
    core = Core(api_port=8123, database_url="postgresql://u@127.0.0.1:7777/db")
    listed = platform_listeners(core, gw, workers=3)
    ports = {port for _, port in listed}
    assert {8123, 8080, 1080, 3128, 3129, 9300, 9301, 9302, 7777} <= ports and 8443 not in ports
    assert ("127.0.0.1", 7777) in listed


def test_this_hosts_own_addresses_are_refused_unless_the_development_setting():
    import ipaddress

    from proxyplane.gateway.local_ips import local_prefixes

    policy = DestinationPolicy()
    assert policy.permits("8.8.8.8", 80)
    policy.set_host([ipaddress.ip_network("8.8.8.0/24")])  # as if this host owned it (its exit IPs, say)
    assert not policy.permits("8.8.8.8", 80) and not policy.permits("::ffff:8.8.8.8", 443)
    assert policy.permits("8.8.4.4", 80)
    policy.set_host(None)  # netlink unavailable: back to the built-in rules
    assert policy.permits("8.8.8.8", 80)
    dev = DestinationPolicy(allow_loopback=True)
    dev.set_host([ipaddress.ip_network("8.8.8.0/24")])
    assert dev.permits("8.8.8.8", 80)
    real = local_prefixes()  # the kernel's local routes: every address of this host
    if real is not None:
        policy.set_host(real)
        for net in real:
            assert not policy.permits(str(net.network_address), 80), net
