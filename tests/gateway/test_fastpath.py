"""The tunnel engine's decision cache (csrc/fast.c, gateway/fastpath.py) as byte conversations on real
loopback sockets: every scenario runs twice, on a gateway with the cache and on one without (the engine
asking Python for every decision), and the bytes each client receives, the refusal categories and the
metered rows must be the same. Each scenario first opens a tunnel with the same credentials (which fills
the cache), then changes what the refusal depends on, then asks again."""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any

import pytest

from proxyplane.core.throttling import Policy
from proxyplane.gateway.access import AccessTable, ServiceEntry
from proxyplane.gateway.auth_throttle import ProxyAuthThrottle
from proxyplane.gateway.context import Settings
from proxyplane.gateway.quotas import QuotaEntry
from proxyplane.gateway.server import Gateway, GatewayConfig

from .clients import basic, open_to

pytestmark = pytest.mark.anyio
EXITS = {"127.0.1.3": "de", "127.0.1.4": "de", "127.0.1.5": "us"}
WHITELISTED = "127.0.4.1"


@pytest.fixture(params=[("asyncio", {"use_uvloop": True})], ids=["uvloop"])
def anyio_backend(request: Any) -> Any:
    return request.param  # uvloop: the C engine serves the tunnel listeners


def services() -> list[ServiceEntry]:
    return [
        ServiceEntry("fast1", "rotating", "fast", "pw", exit_ips=EXITS, whitelist=frozenset({WHITELISTED})),
        ServiceEntry("pin1", "rotating", "pin", "pw", exit_ips=EXITS, session_mode="pinned", pin="127.0.1.4"),
        ServiceEntry("lim1", "rotating", "lim", "pw", exit_ips=EXITS, max_connections=1),
        ServiceEntry("quota1", "rotating", "quo", "pw", exit_ips=EXITS,
                     quota=QuotaEntry("quota1", limit_bytes=1 << 30, limit_requests=None)),
        ServiceEntry("cli1", "rotating", "cli", "pw", exit_ips=EXITS, max_client_ips=1),
        ServiceEntry("lim10", "rotating", "l10", "pw", exit_ips=EXITS, max_connections=10),
        ServiceEntry("qsmall", "rotating", "qs", "pw", exit_ips=EXITS,
                     quota=QuotaEntry("qsmall", limit_bytes=50_000, limit_requests=None)),
    ]


@dataclass
class Run:
    gateway: Gateway
    table: AccessTable

    @property
    def http(self) -> tuple[str, int]:
        return ("127.0.0.1", self.gateway.gateway_port("http"))

    @property
    def socks(self) -> tuple[str, int]:
        return ("127.0.0.1", self.gateway.gateway_port("socks"))


@contextlib.asynccontextmanager
async def gateway(cache: bool) -> AsyncIterator[Run]:
    table = AccessTable(services())
    config = GatewayConfig(gateway_host="127.0.0.1", gateway_http_port=0, gateway_socks_port=0)
    gw = Gateway(table, config, settings=Settings(connect_timeout=3.0, handshake_timeout=5.0,
                                                  allow_loopback=True, tunnel_cache=cache))
    await gw.start()
    gw.ctx.auth_throttle = ProxyAuthThrottle(Policy("proxy-ip", burst=3, drain_seconds=600))
    try:
        yield Run(gw, table)
    finally:
        await gw.close()


async def exchange(addr: tuple[str, int], sends: list[bytes], source: str | None = None,
                   then: bytes = b"GET /x HTTP/1.1\r\nHost: o\r\nConnection: close\r\n\r\n") -> bytes:
    """Send each message after the previous answer; once the tunnel is up send ``then``; every byte
    received until the gateway or the origin closes (SOCKS5 reply addresses blanked: exit and port vary)."""
    reader, writer = await open_to(addr, source)
    got = b""
    try:
        for msg in sends:
            writer.write(msg)
            chunk = await asyncio.wait_for(reader.read(4096), 3)
            got += chunk
            if not chunk:
                return got
        writer.write(then)
        while chunk := await asyncio.wait_for(reader.read(65536), 3):
            got += chunk
    except ConnectionError:
        got += b"<reset>"
    finally:
        writer.close()
    return blank_socks_reply(got)


def norm(got: bytes) -> bytes:
    """The origin echoes the exit a tunnel came from: drawn at random, on either path."""
    return re.sub(rb"127\.0\.1\.\d", b"EXIT", got)


def blank_socks_reply(got: bytes) -> bytes:
    at = got.find(b"\x05\x00\x00\x01")
    return got if at < 0 else got[:at + 4] + b"." * 6 + got[at + 10:]


def connect_msg(target: str, login: str | None, password: str = "pw") -> bytes:
    head = f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n"
    if login is not None:
        head += f"Proxy-Authorization: {basic(login, password)}\r\n"
    return (head + "\r\n").encode()


def socks_msgs(host: str, port: int, login: str | None, password: str = "pw") -> list[bytes]:
    if login is None:
        greeting = [b"\x05\x01\x00"]
    else:
        lb, pb = login.encode(), password.encode()
        greeting = [b"\x05\x01\x02", bytes([1, len(lb)]) + lb + bytes([len(pb)]) + pb]
    if ":" in host:
        import socket

        addr = b"\x04" + socket.inet_pton(socket.AF_INET6, host)
    else:
        addr = b"\x01" + bytes(int(x) for x in host.split("."))
    return [*greeting, b"\x05\x01\x00" + addr + port.to_bytes(2, "big")]


def rows(gw: Gateway) -> list[tuple[Any, ...]]:
    out = [(r.service_id, r.host, r.requests, r.connections, r.bytes_up, r.bytes_down,
            sorted(r.errors.items())) for r in gw.meter.drain()]
    return sorted(out)


async def until(predicate: Callable[[], bool]) -> None:
    for _ in range(150):
        if predicate():
            return
        await asyncio.sleep(0.02)
    raise AssertionError("condition not reached")


Scenario = Callable[[Run, int], Awaitable[list[bytes]]]


async def both(scenario: Scenario, origin_port: int) -> list[bytes]:
    """The transcript with the cache, asserted equal to the one without, with equal metered rows and
    unattributed error categories."""
    results: dict[bool, tuple[list[bytes], list[tuple[Any, ...]], dict[str, int]]] = {}
    for cache in (True, False):
        async with gateway(cache) as run:
            transcript = await scenario(run, origin_port)
            await asyncio.sleep(0.05)
            results[cache] = (transcript, rows(run.gateway), dict(run.gateway.ctx.unattributed_errors))
    assert results[True] == results[False]
    return results[True][0]


async def repeat(run: Run, sends: list[bytes], addr: tuple[str, int], n: int = 3,
                 source: str | None = None) -> list[bytes]:
    return [await exchange(addr, sends, source) for _ in range(n)]


async def test_connect_and_socks5_opened_by_the_cache_answer_and_meter_alike(origin) -> None:
    async def scenario(run: Run, port: int) -> list[bytes]:
        out = await repeat(run, [connect_msg(f"127.0.0.1:{port}", "fast")], run.http)
        out += await repeat(run, socks_msgs("127.0.0.1", port, "fast"), run.socks)
        out += await repeat(run, socks_msgs("127.0.0.1", port, None), run.socks, source=WHITELISTED)
        out += await repeat(run, [connect_msg(f"127.0.0.1:{port}", None)], run.http, source=WHITELISTED)
        out += await repeat(run, [connect_msg(f"127.0.0.1:{port}", "pin")], run.http)
        if run.gateway.ctx.settings.tunnel_cache:  # the second and third of each went through the cache
            assert run.gateway.tunnels is not None and run.gateway.tunnels.stats()["entries"] >= 5
            assert run.gateway.tunnels.fast is not None and len(run.gateway.tunnels.fast.records) >= 5
        return [norm(o) for o in out]

    on = await both(scenario, origin.port)
    assert all(o.startswith((b"HTTP/1.1 200", b"\x05\x02\x01\x00\x05\x00", b"\x05\x00\x05\x00")) for o in on)


async def test_exits_of_cached_tunnels_are_the_pool_and_pins(origin) -> None:
    async with gateway(True) as run:
        for _ in range(24):
            await exchange(run.http, [connect_msg(f"127.0.0.1:{origin.port}", "fast")])
        for _ in range(4):
            await exchange(run.socks, socks_msgs("127.0.0.1", origin.port, "pin"))
        assert run.gateway.tunnels is not None and run.gateway.tunnels.fast is not None
        assert run.gateway.tunnels.stats()["entries"] >= 2
    seen = [peer for peer, _, path in origin.seen]
    assert set(seen[:24]) <= set(EXITS) and len(set(seen[:24])) >= 2  # uniform over the pool
    assert set(seen[24:]) == {"127.0.1.4"}


async def test_limited_and_client_limited_services_are_never_cached(origin) -> None:
    async def scenario(run: Run, port: int) -> list[bytes]:
        out = await repeat(run, [connect_msg(f"127.0.0.1:{port}", "lim")], run.http)
        out += await repeat(run, [connect_msg(f"127.0.0.1:{port}", "cli")], run.http, 2)
        out += await repeat(run, [connect_msg(f"127.0.0.1:{port}", "cli")], run.http, 1, "127.0.4.3")
        assert out[-1].startswith(b"HTTP/1.1 429")  # a second client address: refused (client_ips.py)
        if run.gateway.ctx.settings.tunnel_cache:
            assert run.gateway.tunnels is not None and run.gateway.tunnels.stats()["entries"] == 0
        return [norm(o) for o in out]

    assert await both(scenario, origin.port)


async def test_limited_service_is_cached_and_its_limit_holds_exactly(origin) -> None:
    """A connection limit of 10: the cache opens tunnels with limiter slots Python lent it (while the
    service uses under half its limit); at the limit Python takes the unused ones back before it refuses,
    so exactly 10 open and the 11th is refused, as without the cache; every slot is back afterwards."""

    async def scenario(run: Run, port: int) -> list[bytes]:
        target = f"127.0.0.1:{port}"
        out = await repeat(run, [connect_msg(target, "l10")], run.http)  # the 2nd and 3rd: the cache's
        tunnels = run.gateway.tunnels
        assert tunnels is not None
        if run.gateway.ctx.settings.tunnel_cache:
            assert tunnels.fast is not None and tunnels.fast.lent and tunnels.stats()["entries"] >= 1
        held = []
        for i in range(10):  # from addresses the cache has not seen: Python decides each
            reader, writer = await open_to(run.http, f"127.0.5.{i + 1}")
            writer.write(connect_msg(target, "l10"))
            out.append(await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 3))
            held.append(writer)
        out.append(await exchange(run.http, [connect_msg(target, "l10")]))  # a cached key: no slot left
        out.append(await exchange(run.http, [connect_msg(target, "l10")], "127.0.5.1"))
        for writer in held:
            writer.close()
        await until(lambda: tunnels.stats()["connections"] == 0)
        tunnels.sweep()
        tunnels.sweep()
        out.append(str(run.gateway.ctx.limiter.current("lim10")).encode())
        return [norm(o) for o in out]

    on = await both(scenario, origin.port)
    assert all(o.startswith(b"HTTP/1.1 200") for o in on[3:13])
    assert on[13].startswith(b"HTTP/1.1 429") and on[14].startswith(b"HTTP/1.1 429") and on[15] == b"0"


async def test_quota_service_is_cached_metered_and_cut_when_used_up(origin) -> None:
    """A service with a quota: its cached tunnels count for the quota; the one open when it is used up
    is ended (quota_exhausted) and the next connections are refused, as on Python's path."""

    async def scenario(run: Run, port: int) -> list[bytes]:
        target = f"127.0.0.1:{port}"
        out = await repeat(run, [connect_msg(target, "qs")], run.http)
        out += await repeat(run, socks_msgs("127.0.0.1", port, "qs"), run.socks)
        tunnels = run.gateway.tunnels
        cached = run.gateway.ctx.settings.tunnel_cache and tunnels is not None and tunnels.fast is not None \
            and tunnels.fast.quota_ok  # not on an engine built before fast_cut (engine_module.py)
        if cached:
            assert tunnels is not None and tunnels.stats()["entries"] >= 2
        reader, writer = await open_to(run.http)  # the cache opens it; 60 KB through it: over the quota
        writer.write(connect_msg(target, "qs"))
        held = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 3)
        writer.write(b"GET /big=60000 HTTP/1.1\r\nHost: o\r\n\r\n")
        held += await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 3)
        held += await asyncio.wait_for(reader.readexactly(60000), 3)
        if cached:  # the held tunnel is the engine's alone
            assert tunnels is not None and tunnels.stats()["fast"] == 1
        run.gateway.meter.harvest()
        held += await asyncio.wait_for(reader.read(), 3)  # ended: b""
        writer.close()
        out.append(held)
        out.append(await exchange(run.http, [connect_msg(target, "qs")]))
        out.append(await exchange(run.socks, socks_msgs("127.0.0.1", port, "qs")))
        return [norm(o) for o in out]

    on = await both(scenario, origin.port)
    assert on[-3].endswith(b"x" * 60000) and on[-2].startswith(b"HTTP/1.1 402")
    assert on[-1] == b"\x05\x02\x01\x01"


async def test_suspended_service_is_refused_after_being_cached(origin) -> None:
    async def scenario(run: Run, port: int) -> list[bytes]:
        out = await repeat(run, [connect_msg(f"127.0.0.1:{port}", "fast")], run.http, 2)
        out += await repeat(run, socks_msgs("127.0.0.1", port, "fast"), run.socks, 2)
        out += await repeat(run, socks_msgs("127.0.0.1", port, None), run.socks, 2, WHITELISTED)
        entry = run.table.get("fast1")
        assert entry is not None
        run.table.upsert(replace(entry, active=False))
        out.append(await exchange(run.http, [connect_msg(f"127.0.0.1:{port}", "fast")]))
        out.append(await exchange(run.socks, socks_msgs("127.0.0.1", port, "fast")))
        out.append(await exchange(run.socks, socks_msgs("127.0.0.1", port, None), WHITELISTED))
        return [norm(o) for o in out[-3:]]

    on = await both(scenario, origin.port)
    assert on[0].startswith(b"HTTP/1.1 403") and on[1] == b"\x05\x02\x01\x01" and on[2] == b"\x05\xff"


@pytest.mark.parametrize("change", ["wrong_password", "unknown_login", "password_changed", "not_whitelisted",
                                    "removed", "throttled", "address_family", "blocked", "limit_reached"])
async def test_every_refusal_reason_is_pythons(origin, change: str) -> None:
    """A decision cached for one connection never answers a refused one: same bytes, same categories."""

    async def scenario(run: Run, port: int) -> list[bytes]:
        target = f"127.0.0.1:{port}"
        out = await repeat(run, [connect_msg(target, "fast")], run.http, 2)
        out += await repeat(run, socks_msgs("127.0.0.1", port, "fast"), run.socks, 2)
        out += await repeat(run, [connect_msg(target, None)], run.http, 2, WHITELISTED)
        http, socks, source = [connect_msg(target, "fast")], socks_msgs("127.0.0.1", port, "fast"), None
        entry = run.table.get("fast1")
        assert entry is not None
        if change == "wrong_password":
            http, socks = [connect_msg(target, "fast", "bad")], socks_msgs("127.0.0.1", port, "fast", "bad")
        elif change == "unknown_login":
            http, socks = [connect_msg(target, "nobody")], socks_msgs("127.0.0.1", port, "nobody")
        elif change == "password_changed":
            run.table.upsert(replace(entry, password="new"))
        elif change == "not_whitelisted":
            http, socks = [connect_msg(target, None)], socks_msgs("127.0.0.1", port, None)
            source = "127.0.4.2"
        elif change == "removed":
            run.table.remove("fast1")
        elif change == "throttled":  # three failures from this address: its good login is refused too
            for _ in range(3):
                await exchange(run.http, [connect_msg(target, "fast", "bad")])
        elif change == "address_family":
            http, socks = [connect_msg(f"[::1]:{port}", "fast")], socks_msgs("::1", port, "fast")
        elif change == "blocked":
            http, socks = [connect_msg("10.0.0.1:80", "fast")], socks_msgs("10.0.0.1", 80, "fast")
        elif change == "limit_reached":
            run.table.upsert(replace(entry, max_connections=1))
            held = await open_to(run.http)
            held[1].write(connect_msg(target, "fast"))
            assert (await asyncio.wait_for(held[0].readuntil(b"\r\n\r\n"), 3)).startswith(b"HTTP/1.1 200")
        out.append(await exchange(run.http, http, source))
        out.append(await exchange(run.socks, socks, source))
        if change == "limit_reached":
            held[1].close()
        return out[-2:]

    on = await both(scenario, origin.port)
    assert not on[0].startswith(b"HTTP/1.1 200") and b"host=o" not in on[0] + on[1]


async def test_malformed_request_after_cached_credentials_is_counted_for_the_service(origin) -> None:
    async def scenario(run: Run, port: int) -> list[bytes]:
        out = await repeat(run, socks_msgs("127.0.0.1", port, "fast"), run.socks, 2)
        bad = [*socks_msgs("127.0.0.1", port, "fast")[:2], b"\x04\x01\x00\x01\x7f\x00\x00\x01\x00\x50"]
        out += await repeat(run, bad, run.socks, 2)  # the second: credentials accepted by the cache
        return out[-2:]

    on = await both(scenario, origin.port)
    assert on[0] == on[1] and on[0].startswith(b"\x05\x02\x01\x00\x05\x01")


async def test_refused_upstream_of_a_cached_tunnel_is_answered_by_python(origin) -> None:
    """The origin goes away after the decision was cached: the engine hands the failed connect back."""
    async def scenario(run: Run, port: int) -> list[bytes]:
        server = await asyncio.start_server(lambda r, w: w.close(), "127.0.0.1", 0)
        gone = server.sockets[0].getsockname()[1]
        out = await repeat(run, [connect_msg(f"127.0.0.1:{gone}", "fast")], run.http, 2)
        out += await repeat(run, socks_msgs("127.0.0.1", gone, "fast"), run.socks, 2)
        server.close()
        await server.wait_closed()
        out += await repeat(run, [connect_msg(f"127.0.0.1:{gone}", "fast")], run.http, 2)
        out += await repeat(run, socks_msgs("127.0.0.1", gone, "fast"), run.socks, 2)
        return [o.replace(str(gone).encode(), b"PORT") for o in out[-4:]]

    on = await both(scenario, origin.port)
    assert on[0].startswith(b"HTTP/1.1 502") and on[2] == b"\x05\x02\x01\x00\x05\x05\x00\x01" + b"\x00" * 6


async def test_slots_lent_to_the_engine_go_back_and_the_limiter_follows(origin) -> None:
    async with gateway(True) as run:
        gw = run.gateway
        reader, writer = await open_to(run.http)
        writer.write(connect_msg(f"127.0.0.1:{origin.port}", "fast"))
        await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 3)
        writer.close()
        tunnels = gw.tunnels
        assert tunnels is not None
        await until(lambda: tunnels.stats()["connections"] == 0)
        reader, writer = await open_to(run.http)  # opened by the cache, held open
        writer.write(connect_msg(f"127.0.0.1:{origin.port}", "fast"))
        assert (await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 3)).startswith(b"HTTP/1.1 200")
        assert tunnels.fast is not None and tunnels.stats()["fast"] == 1
        tunnels.sweep()
        assert gw.ctx.limiter.current("fast1") == 1 and gw.open_connections() == 1
        assert gw.ctx.capacity.charged["fast1"] >= 2  # the lent slots are charged to the budget
        writer.close()
        await until(lambda: tunnels.stats()["connections"] == 0)
        tunnels.sweep()  # opened one since the last sweep: LEASE kept
        tunnels.sweep()  # none since: every unused slot back
        assert gw.ctx.limiter.current("fast1") == 0 and gw.open_connections() == 0
        assert gw.ctx.capacity.total == 0 and not tunnels.fast.lent
