"""A rotating service drawing from an upstream pool (issue 36.4), on loopback, through both tunnel paths:
the supplier is a second gateway (its own rotating service whose exits are 127.0.3.x: the origin sees
which one) or a pproxy process. Targeting reaches the supplier's username as the template says, a session
stays on one supplier exit, a dead supplier is failed over, none left answers 502 with the usage error
category, a strict session whose supplier left errors instead of moving, and the bytes metered for the
customer (and counted for the supplier) are the bytes the origin exchanged."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator

import pytest

from proxyplane.core.proxy_chain import parse_template
from proxyplane.gateway.access import AccessTable, ServiceEntry
from proxyplane.gateway.context import Settings
from proxyplane.gateway.metering import SUPPLIER, UsageRow, supplier_rows
from proxyplane.gateway.server import Gateway, GatewayConfig
from proxyplane.gateway.subusers import SubuserEntry
from proxyplane.gateway.upstream_pools import UpstreamEntry
from tests.domains.upstreams.suppliers import free_tcp_port, pproxy
from tests.gateway.clients import basic, connect_tunnel, http_get, read_response, request, socks_connect

pytestmark = pytest.mark.anyio
SUPPLIER_EXITS = {"127.0.3.1": "de", "127.0.3.2": "us", "127.0.3.3": "us", "127.0.3.4": "us"}
TEMPLATE = "{user}[-country-{country}][-session-{session}]"


def settings() -> Settings:
    return Settings(connect_timeout=2.0, handshake_timeout=5.0, allow_loopback=True)


async def gateway(entries: list[ServiceEntry]) -> Gateway:
    config = GatewayConfig(gateway_host="127.0.0.1", gateway_http_port=0, gateway_socks_port=0)
    gw = Gateway(AccessTable(entries), config, settings=settings())
    await gw.start()
    return gw


def upstream(port: int, position: int, scheme: str = "http", user: str = "acct", password: str = "sup-pw",
             template: str = TEMPLATE) -> UpstreamEntry:
    return UpstreamEntry(str(uuid.uuid4()), "resi", position, scheme, "127.0.0.1", port, user, password,
                         parse_template(template), "unknown")


@pytest.fixture
async def supplier() -> AsyncIterator[Gateway]:
    gw = await gateway([ServiceEntry("sup", "rotating", "acct", "sup-pw", exit_ips=SUPPLIER_EXITS,
                                     max_connections=100)])
    yield gw
    await gw.close()


@pytest.fixture
async def reseller() -> AsyncIterator[Gateway]:
    gw = await gateway([ServiceEntry("resold", "rotating", "cust", "pw", exit_ips={}, max_connections=100,
                                     upstream_pool="resi")])
    yield gw
    await gw.close()


def port_of(gw: Gateway, kind: str) -> tuple[str, int]:
    return ("127.0.0.1", gw.gateway_port(kind))


async def through_tunnel(gw: Gateway, login: str, origin_port: int, path: str = "/") -> tuple[int, bytes]:
    status, reader, writer = await connect_tunnel(port_of(gw, "http"), f"127.0.0.1:{origin_port}",
                                                  basic(login, "pw"))
    if status != 200:
        writer.close()
        return status, b""
    writer.write(request(path, extra="Connection: close\r\n"))
    code, _, body, _ = await read_response(reader)
    writer.close()
    return code, body


def usage(gw: Gateway, service_id: str, rows: list[UsageRow] | None = None
          ) -> tuple[int, int, dict[str, int]]:
    up = down = 0
    errors: dict[str, int] = {}
    for row in gw.ctx.meter.drain() if rows is None else rows:
        if row.service_id == service_id:
            up, down = up + row.bytes_up, down + row.bytes_down
            for k, n in row.errors.items():
                errors[k] = errors.get(k, 0) + n
    return up, down, errors


def supplier_counts(rows: list[UsageRow]) -> dict[str, tuple[int, int, int, int]]:
    """{upstream id: (up, down, tunnels, failed)} of the suppliers' rows the meter holds."""
    out: dict[str, tuple[int, int, int, int]] = {}
    for row in supplier_rows(rows)[1]:
        u, d, t, f = out.get(row.service_id.removeprefix(SUPPLIER), (0, 0, 0, 0))
        out[row.service_id.removeprefix(SUPPLIER)] = (u + row.bytes_up, d + row.bytes_down,
                                                      t + row.connections, f + row.errors.get("failed", 0))
    return out


async def test_targeting_reaches_the_supplier_and_a_session_keeps_its_exit(
    supplier: Gateway, reseller: Gateway, origin
) -> None:
    reseller.ctx.upstreams.replace([upstream(supplier.gateway_port("http"), 1)])
    code, body = await through_tunnel(reseller, "cust-country-de", origin.port)
    assert code == 200 and body.startswith(b"127.0.3.1 ")  # the supplier's only German exit
    exits = set()
    for _ in range(4):
        code, body = await through_tunnel(reseller, "cust-country-us-session-s1", origin.port)
        assert code == 200
        exits.add(body.split(b" ")[0].decode())
    assert len(exits) == 1 and exits <= {"127.0.3.2", "127.0.3.3", "127.0.3.4"}
    # the supplier holds one session for it, under the derived id (not the customer's "s1")
    [session] = supplier.ctx.router.list_sessions("sup")
    assert session.exit_ip in exits and session.sid != "s1" and len(session.sid) == 16
    status, _, body = await http_get(port_of(reseller, "http"), f"http://127.0.0.1:{origin.port}/plain",
                                     basic("cust-country-de", "pw"))
    assert status == 200 and body.startswith(b"127.0.3.1 /plain") and b"auth=False" in body
    rep, _, reader, writer = await socks_connect(port_of(reseller, "socks"), "127.0.0.1", origin.port,
                                                 "cust-country-de", "pw")
    assert rep == 0
    writer.write(request("/socks", extra="Connection: close\r\n"))
    assert (await read_response(reader))[2].startswith(b"127.0.3.1 /socks")
    writer.close()


async def test_bytes_metered_equal_the_origins_and_are_counted_for_the_supplier(
    supplier: Gateway, reseller: Gateway, tcp_echo
) -> None:
    entry = upstream(supplier.gateway_port("http"), 1)
    reseller.ctx.upstreams.replace([entry])
    usage(reseller, "resold")
    payload = b"z" * 300_001
    status, reader, writer = await connect_tunnel(port_of(reseller, "http"), f"127.0.0.1:{tcp_echo.port}",
                                                  basic("cust", "pw"))
    assert status == 200
    writer.write(payload)
    assert await asyncio.wait_for(reader.readexactly(len(payload)), 5) == payload
    writer.close()
    await asyncio.sleep(0.2)
    rows = reseller.ctx.meter.drain()  # drain harvests: the supplier's share is counted then
    up, down, _ = usage(reseller, "resold", rows)
    assert up == down == len(payload)
    assert supplier_counts(rows) == {entry.upstream_id: (len(payload), len(payload), 1, 0)}
    assert all(r.service_id in ("resold", SUPPLIER + entry.upstream_id) for r in rows)


async def test_a_dead_supplier_is_failed_over_then_502_when_none_is_left(
    supplier: Gateway, reseller: Gateway, origin
) -> None:
    dead = upstream(free_tcp_port(), 1)
    second = upstream(supplier.gateway_port("http"), 2)
    reseller.ctx.upstreams.replace([dead, second])
    assert (await through_tunnel(reseller, "cust", origin.port))[0] == 200
    counts = supplier_counts(reseller.ctx.meter.drain())
    assert counts[dead.upstream_id] == (0, 0, 0, 1) and counts[second.upstream_id][2:] == (1, 0)
    reseller.ctx.upstreams.replace([dead, upstream(free_tcp_port(), 2)])
    usage(reseller, "resold")
    status, _, _ = await connect_tunnel(port_of(reseller, "http"), f"127.0.0.1:{origin.port}",
                                        basic("cust", "pw"))
    assert status == 502
    rep, *_rest = await socks_connect(port_of(reseller, "socks"), "127.0.0.1", origin.port, "cust", "pw")
    assert rep == 1  # general failure
    status, _, body = await http_get(port_of(reseller, "http"), f"http://127.0.0.1:{origin.port}/",
                                     basic("cust", "pw"))
    assert status == 502 and b"every upstream supplier failed" in body and b"127.0.0.1:" + str(
        dead.port).encode() not in body  # the supplier's address is never shown
    assert usage(reseller, "resold")[2].get("upstream_failed") == 3


async def test_a_strict_session_errors_when_its_supplier_left_a_loose_one_moves(
    supplier: Gateway, reseller: Gateway, origin
) -> None:
    first = upstream(supplier.gateway_port("http"), 1)
    async with pproxy("http", "acct", "sup-pw") as port:
        second = upstream(port, 2, template="{user}")
        reseller.ctx.upstreams.replace([first, second])
        for login in ("cust-session-a1-strict-1", "cust-session-a2"):
            code, body = await through_tunnel(reseller, login, origin.port)
            assert code == 200 and body.startswith(b"127.0.3.")  # through the supplier gateway
        reseller.ctx.upstreams.replace([second])  # the first supplier left the pool
        code, body = await through_tunnel(reseller, "cust-session-a2", origin.port)
        assert code == 200 and body.startswith(b"127.0.0.1 ")  # moved to pproxy (it dials from 127.0.0.1)
        assert (await through_tunnel(reseller, "cust-session-a1-strict-1", origin.port))[0] == 502
    assert usage(reseller, "resold")[2].get("sticky_gone") == 1


async def test_chains_through_pproxy_over_http_connect_and_socks5(reseller: Gateway, origin) -> None:
    async with pproxy("http", "acct", "sup-pw") as http_port, \
            pproxy("socks5", "acct", "sup-pw") as socks_port:
        for scheme, port in (("http", http_port), ("socks5", socks_port)):
            reseller.ctx.upstreams.replace([upstream(port, 1, scheme, template="{user}")])
            code, body = await through_tunnel(reseller, "cust", origin.port, f"/{scheme}")
            assert code == 200 and body.startswith(f"127.0.0.1 /{scheme}".encode())
            rep, _, reader, writer = await socks_connect(port_of(reseller, "socks"), "127.0.0.1", origin.port,
                                                         "cust", "pw")
            assert rep == 0
            writer.write(request(f"/s-{scheme}", extra="Connection: close\r\n"))
            assert (await read_response(reader))[2].startswith(f"127.0.0.1 /s-{scheme}".encode())
            writer.close()


async def test_a_sub_user_limited_to_countries_is_held_to_them_through_the_supplier(
    supplier: Gateway, reseller: Gateway, origin
) -> None:
    sub = SubuserEntry(pk=7, subuser_id="sub7", login="team_de", password="sub-pw",
                       countries=frozenset({"de"}))
    reseller.ctx.access.upsert(ServiceEntry("resold", "rotating", "cust", "pw", exit_ips={},
                                            max_connections=100, upstream_pool="resi", subusers=(sub,)))
    reseller.ctx.upstreams.replace([upstream(supplier.gateway_port("http"), 1)])
    status, reader, writer = await connect_tunnel(port_of(reseller, "http"), f"127.0.0.1:{origin.port}",
                                                  basic("team_de", "sub-pw"))
    assert status == 200
    writer.write(request("/sub", extra="Connection: close\r\n"))
    assert (await read_response(reader))[2].startswith(b"127.0.3.1 /sub")  # the German exit, unasked
    writer.close()
    status, _, _ = await connect_tunnel(port_of(reseller, "http"), f"127.0.0.1:{origin.port}",
                                        basic("team_de-country-us", "sub-pw"))
    assert status == 407  # refused at authentication, as for local exits
