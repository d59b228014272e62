"""The platform's own listeners are never proxy destinations, and loopback only with the development setting
(issue 30.1): every address form (dotted, decimal, hex, octal, short IPv4, IPv6, IPv4-mapped, names that
resolve to loopback) over HTTP, CONNECT and SOCKS5 (IPv4, IPv6 and domain address types), on real loopback
sockets, on both tunnel paths (the conftest runs each test on the C engine and on the Python path)."""

from __future__ import annotations

import asyncio
import socket

import pytest

from proxyplane.gateway.access import AccessTable, ServiceEntry
from proxyplane.gateway.context import Settings
from proxyplane.gateway.server import Gateway, GatewayConfig

from .clients import basic, connect_tunnel, http_get, socks_connect
from .conftest import Origin, _serve_origin, free_port, services

pytestmark = pytest.mark.anyio


def has_aaaa(name: str) -> bool:
    try:
        return bool(socket.getaddrinfo(name, 80, socket.AF_INET6, socket.SOCK_STREAM))
    except OSError:
        return False


# every spelling of 127.0.0.1 a client may send (the names resolve through the system resolver)
IPV4_FORMS = ("127.0.0.1", "2130706433", "0x7f000001", "0177.0.0.1", "127.1", "localhost")
# through a service whose exit is ::1 (IPv6 destinations go out of IPv6 exits only); "localhost" too where
# the host's resolver has an AAAA for it (not every /etc/hosts does)
IPV6_FORMS = (
    "::1",
    "::ffff:127.0.0.1",
    "0:0:0:0:0:0:0:1",
    *(("localhost",) if has_aaaa("localhost") else ()),
)
V4, V6 = ("rot", "pw"), ("six", "pw")


def url_host(form: str) -> str:
    return f"[{form}]" if ":" in form else form


async def _gateway(own: tuple[tuple[str, int], ...] = (), **settings) -> Gateway:
    static = free_port(["127.0.1.1"])
    config = GatewayConfig(
        gateway_host="127.0.0.1", gateway_http_port=0, gateway_socks_port=0, static_http_port=static
    )
    six = ServiceEntry(
        "v6", "rotating", "six", "pw", exit_ips={"::1": "de"}, session_mode="rotating", max_connections=50
    )
    gateway = Gateway(
        AccessTable([*services(), six]),
        config,
        settings=Settings(connect_timeout=3.0, own_listeners=own, **settings),
    )
    await gateway.start()
    return gateway


async def _origin(host: str) -> tuple[Origin, asyncio.Server]:
    org = Origin(0)
    server = await asyncio.start_server(lambda r, w: _serve_origin(org, r, w), host, 0)
    org.port = server.sockets[0].getsockname()[1]
    return org, server


async def _outcomes(
    gateway: Gateway, forms: tuple[str, ...], port: int, login: tuple[str, str] = V4
) -> dict[str, tuple]:
    """(HTTP status, CONNECT status, SOCKS5 reply) per address form, to ``port``."""
    http = ("127.0.0.1", gateway.gateway_port("http"))
    socks = ("127.0.0.1", gateway.gateway_port("socks"))
    out = {}
    for form in forms:
        status, _, _ = await http_get(http, f"http://{url_host(form)}:{port}/{form}", basic(*login))
        tunnel, _, writer = await connect_tunnel(http, f"{url_host(form)}:{port}", basic(*login))
        writer.close()
        rep, _, _, writer = await socks_connect(socks, form, port, *login)
        writer.close()
        out[form] = (status, tunnel, rep)
    return out


async def _origins() -> tuple[Origin, list[asyncio.Server]]:
    """One origin on 127.0.0.1 and ::1, same port."""
    origin, server = await _origin("127.0.0.1")
    v6 = await asyncio.start_server(lambda r, w: _serve_origin(origin, r, w), "::1", origin.port)
    return origin, [server, v6]


def _refused(got: dict[str, tuple]) -> None:
    for form, outcome in got.items():
        assert outcome == (403, 403, 2), (form, outcome)


async def test_loopback_refused_in_every_form_without_the_development_setting():
    origin, servers = await _origins()
    gateway = await _gateway()
    try:
        v4 = await _outcomes(gateway, (*IPV4_FORMS, "0.0.0.0", "127.0.0.2"), origin.port)
        v6 = await _outcomes(gateway, (*IPV6_FORMS, "::"), origin.port, V6)
        _refused(v4)
        _refused(v6)
        assert origin.connections == 0
        rows = gateway.meter.drain()
        assert sum(r.errors.get("blocked", 0) for r in rows) == 3 * (len(v4) + len(v6))
    finally:
        await gateway.close()
        for server in servers:
            server.close()


async def test_development_setting_lets_loopback_through_in_every_form():
    origin, servers = await _origins()
    gateway = await _gateway(allow_loopback=True)
    # an IPv4-mapped destination cannot be dialed from the IPv6 exit ::1 (the kernel refuses the mix): it is
    # judged (refused above) but not reachable here
    v6_forms = tuple(form for form in IPV6_FORMS if form != "::ffff:127.0.0.1")
    try:
        got = await _outcomes(gateway, IPV4_FORMS, origin.port)
        got |= {
            f"v6 {form}": out for form, out in (await _outcomes(gateway, v6_forms, origin.port, V6)).items()
        }
        for form, outcome in got.items():
            assert outcome == (200, 200, 0), (form, outcome)
        assert {path for _, _, path in origin.seen} == {f"/{form}" for form in (*IPV4_FORMS, *v6_forms)}
        assert {peer for peer, _, _ in origin.seen} <= {"127.0.1.3", "127.0.1.4", "127.0.1.5", "::1"}  # exits
    finally:
        await gateway.close()
        for server in servers:
            server.close()


@pytest.mark.parametrize("dev", [False, True], ids=["dev-off", "dev-on"])
async def test_the_platforms_own_listeners_are_refused_in_any_mode(dev):
    api, api_server = await _origin("127.0.0.1")  # stands for the API (declared, bound on loopback)
    wild, wild_server = await _origin("0.0.0.0")  # a listener on every address (the database, say)
    own = (("127.0.0.1", api.port), ("0.0.0.0", wild.port))
    gateway = await _gateway(own, allow_loopback=dev)
    try:
        targets = [
            api.port,
            wild.port,
            gateway.gateway_port("http"),
            gateway.gateway_port("socks"),
            gateway.static_port("127.0.1.1", "http"),
        ]
        for port in targets:
            _refused(await _outcomes(gateway, (*IPV4_FORMS, "0.0.0.0", "127.0.1.1"), port))
            _refused(await _outcomes(gateway, (*IPV6_FORMS, "::"), port, V6))
        assert api.connections == 0 and wild.connections == 0
    finally:
        await gateway.close()
        api_server.close()
        wild_server.close()


async def test_an_address_allowed_by_name_is_the_only_loopback_destination():
    demo, demo_server = await _origin("127.0.0.1")
    other, other_server = await _origin("127.0.0.1")
    gateway = await _gateway(allow_destinations=(("127.0.0.1", demo.port),))
    try:
        got = await _outcomes(gateway, ("127.0.0.1", "2130706433", "localhost"), demo.port)
        assert set(got.values()) == {(200, 200, 0)}
        got = await _outcomes(gateway, ("127.0.0.1", "localhost"), other.port)
        assert set(got.values()) == {(403, 403, 2)}
        assert other.connections == 0 and demo.connections == 9
    finally:
        await gateway.close()
        demo_server.close()
        other_server.close()
