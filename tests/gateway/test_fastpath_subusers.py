"""Sub-users on the tunnel engine's decision cache (gateway/fastpath.py) as byte conversations on real
loopback sockets, as test_fastpath.py does for services: every scenario runs on a gateway with the cache
and on one without (Python deciding every connection); the bytes each client receives, the metered rows
(under the sub-user's metering id) and the unattributed error categories must be the same. Each scenario
first opens tunnels with the same credentials (the second and later ones: the engine's alone), then
changes what a refusal depends on, then asks again."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import replace
from typing import Any

import pytest

from proxyplane.core.throttling import Policy
from proxyplane.gateway.access import AccessTable, ServiceEntry
from proxyplane.gateway.auth_throttle import ProxyAuthThrottle
from proxyplane.gateway.context import Settings
from proxyplane.gateway.quotas import QuotaEntry
from proxyplane.gateway.server import Gateway, GatewayConfig
from proxyplane.gateway.subusers import SubuserEntry

from .clients import open_to
from .test_fastpath import EXITS, Run, connect_msg, exchange, norm, repeat, rows, socks_msgs, until

pytestmark = pytest.mark.anyio
SUB_WL = "127.0.4.5"  # whitelisted for sub-user "sub"


@pytest.fixture(params=[("asyncio", {"use_uvloop": True})], ids=["uvloop"])
def anyio_backend(request: Any) -> Any:
    return request.param  # uvloop: the C engine serves the tunnel listeners


def sub(pk: int, login: str, **kw: Any) -> SubuserEntry:
    return SubuserEntry(pk, f"s{pk}", login, "pw", **kw)


def services() -> list[ServiceEntry]:
    return [
        ServiceEntry("svc1", "rotating", "owner", "pw", exit_ips=EXITS, subusers=(
            sub(1, "sub", whitelist=frozenset({SUB_WL})),
            sub(2, "capped", limit_bytes=50_000),
            sub(3, "deonly", countries=frozenset({"de"})),
            sub(4, "lsub", max_connections=5),
            sub(5, "csub", max_client_ips=3),
        )),
        ServiceEntry("svc2", "rotating", "qowner", "pw", exit_ips=EXITS, subusers=(sub(6, "qsub"),),
                     quota=QuotaEntry("svc2", limit_bytes=50_000, limit_requests=None)),
        ServiceEntry("svc3", "rotating", "lowner", "pw", exit_ips=EXITS, subusers=(sub(7, "under"),),
                     max_connections=10),
    ]


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


async def both(scenario: Callable[[Run, int], Awaitable[list[bytes]]], origin_port: int) -> list[bytes]:
    results: dict[bool, tuple[list[bytes], list[tuple[Any, ...]], dict[str, int]]] = {}
    for cache in (True, False):
        async with gateway(cache) as run:
            transcript = await scenario(run, origin_port)
            await asyncio.sleep(0.05)
            results[cache] = (transcript, rows(run.gateway), dict(run.gateway.ctx.unattributed_errors))
    assert results[True] == results[False]
    return results[True][0]


def cached(run: Run) -> bool:
    tunnels = run.gateway.tunnels
    return bool(run.gateway.ctx.settings.tunnel_cache and tunnels is not None and tunnels.fast is not None
                and tunnels.fast.quota_ok)  # an engine built before fast_cut caches no sub-user


def change_sub(run: Run, service_id: str, pk: int, **kw: Any) -> None:
    """An access-table write, as the store's change feed makes: the sub-user ``pk`` of the service."""
    entry = run.table.get(service_id)
    assert entry is not None
    subs = tuple(replace(s, **kw) if s.pk == pk else s for s in entry.subusers)
    run.table.upsert(replace(entry, subusers=subs))


async def test_sub_user_tunnels_opened_by_the_cache_answer_and_meter_alike(origin) -> None:
    async def scenario(run: Run, port: int) -> list[bytes]:
        target = f"127.0.0.1:{port}"
        out = await repeat(run, [connect_msg(target, "sub")], run.http)
        out += await repeat(run, socks_msgs("127.0.0.1", port, "sub"), run.socks)
        out += await repeat(run, socks_msgs("127.0.0.1", port, None), run.socks, source=SUB_WL)
        out += await repeat(run, [connect_msg(target, None)], run.http, source=SUB_WL)
        out += await repeat(run, [connect_msg(target, "deonly-country-de")], run.http)
        out += await repeat(run, [connect_msg(target, "qsub")], run.http)
        if cached(run):  # the second and third of each went through the cache
            tunnels = run.gateway.tunnels
            assert tunnels is not None and tunnels.stats()["entries"] >= 5
        return [norm(o) for o in out]

    on = await both(scenario, origin.port)
    assert all(o.startswith((b"HTTP/1.1 200", b"\x05\x02\x01\x00\x05\x00", b"\x05\x00\x05\x00")) for o in on)


async def test_sub_users_with_connection_or_client_limits_are_never_cached(origin) -> None:
    async def scenario(run: Run, port: int) -> list[bytes]:
        target = f"127.0.0.1:{port}"
        out = await repeat(run, [connect_msg(target, "lsub")], run.http)
        out += await repeat(run, [connect_msg(target, "csub")], run.http)
        out += await repeat(run, socks_msgs("127.0.0.1", port, "under"), run.socks)
        if cached(run):
            tunnels = run.gateway.tunnels
            assert tunnels is not None and tunnels.stats()["entries"] == 0
        return [norm(o) for o in out]

    assert await both(scenario, origin.port)


@pytest.mark.parametrize("change", [
    "wrong_password", "password_changed", "not_whitelisted", "disabled", "removed", "suspended",
    "country", "traffic_limit", "quota", "throttled", "address_family", "blocked", "limit_reached"])
async def test_every_refusal_reason_of_a_cached_sub_user_is_pythons(origin, change: str) -> None:
    """A sub-user's decision cached for one connection never answers a refused one."""

    async def scenario(run: Run, port: int) -> list[bytes]:
        target = f"127.0.0.1:{port}"
        login = "qsub" if change == "quota" else "sub"
        out = await repeat(run, [connect_msg(target, login)], run.http, 2)
        out += await repeat(run, socks_msgs("127.0.0.1", port, login), run.socks, 2)
        out += await repeat(run, [connect_msg(target, None)], run.http, 2, SUB_WL)
        out += await repeat(run, [connect_msg(target, "deonly-country-de")], run.http, 2)
        http, socks, source = [connect_msg(target, login)], socks_msgs("127.0.0.1", port, login), None
        if change == "wrong_password":
            http, socks = [connect_msg(target, "sub", "bad")], socks_msgs("127.0.0.1", port, "sub", "bad")
        elif change == "password_changed":
            change_sub(run, "svc1", 1, password="new")
        elif change == "not_whitelisted":
            http, socks = [connect_msg(target, None)], socks_msgs("127.0.0.1", port, None)
            source = "127.0.4.6"
        elif change == "disabled":
            change_sub(run, "svc1", 1, enabled=False)
        elif change == "removed":
            entry = run.table.get("svc1")
            assert entry is not None
            run.table.upsert(replace(entry, subusers=entry.subusers[1:]))
        elif change == "suspended":
            entry = run.table.get("svc1")
            assert entry is not None
            run.table.upsert(replace(entry, active=False))
        elif change == "country":  # a country its sub-user may not use (cached: the same login with de)
            http = [connect_msg(target, "deonly-country-us")]
            socks = socks_msgs("127.0.0.1", port, "deonly-country-us")
        elif change == "traffic_limit":  # the store says its limit is reached (another node's traffic)
            change_sub(run, "svc1", 1, limit_reached=True)
        elif change == "quota":
            entry = run.table.get("svc2")
            assert entry is not None and entry.quota is not None
            run.table.upsert(replace(entry, quota=replace(entry.quota, limit_reached=True)))
        elif change == "throttled":  # three failures from this address: its good login is refused too
            for _ in range(3):
                await exchange(run.http, [connect_msg(target, "sub", "bad")])
        elif change == "address_family":
            http, socks = [connect_msg(f"[::1]:{port}", "sub")], socks_msgs("::1", port, "sub")
        elif change == "blocked":
            http, socks = [connect_msg("10.0.0.1:80", "sub")], socks_msgs("10.0.0.1", 80, "sub")
        elif change == "limit_reached":  # a connection limit now: Python's path decides (and refuses)
            change_sub(run, "svc1", 1, max_connections=1)
            held = await open_to(run.http)
            held[1].write(connect_msg(target, "sub"))
            assert (await asyncio.wait_for(held[0].readuntil(b"\r\n\r\n"), 3)).startswith(b"HTTP/1.1 200")
        out.append(await exchange(run.http, http, source))
        out.append(await exchange(run.socks, socks, source))
        if change == "limit_reached":
            held[1].close()
        return out[-2:]

    on = await both(scenario, origin.port)
    assert not on[0].startswith(b"HTTP/1.1 200") and b"host=o" not in on[0] + on[1]


@pytest.mark.parametrize("login", ["capped", "qsub"])
async def test_cached_sub_user_tunnel_is_cut_at_its_traffic_limit(origin, login: str) -> None:
    """The sub-user's own traffic limit ("capped") or its service's quota ("qsub"), 50 KB: the cached
    tunnel that moves 60 KB is ended at the next harvest (subuser_traffic_limit / quota_exhausted) and
    the next connections are refused, as on Python's path."""

    async def scenario(run: Run, port: int) -> list[bytes]:
        target = f"127.0.0.1:{port}"
        out = await repeat(run, [connect_msg(target, login)], run.http)
        out += await repeat(run, socks_msgs("127.0.0.1", port, login), run.socks)
        reader, writer = await open_to(run.http)  # the cache opens it
        writer.write(connect_msg(target, login))
        held = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 3)
        writer.write(b"GET /big=60000 HTTP/1.1\r\nHost: o\r\n\r\n")
        held += await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 3)
        held += await asyncio.wait_for(reader.readexactly(60000), 3)
        tunnels = run.gateway.tunnels
        if cached(run):  # the held tunnel is the engine's alone
            assert tunnels is not None and tunnels.stats()["fast"] == 1
        run.gateway.meter.harvest()
        held += await asyncio.wait_for(reader.read(), 3)  # ended: b""
        writer.close()
        out.append(held)
        out.append(await exchange(run.http, [connect_msg(target, login)]))
        out.append(await exchange(run.socks, socks_msgs("127.0.0.1", port, login)))
        return [norm(o) for o in out]

    on = await both(scenario, origin.port)
    assert on[-3].endswith(b"x" * 60000)
    assert on[-2].startswith(b"HTTP/1.1 402" if login == "qsub" else b"HTTP/1.1 407")
    assert on[-1] == b"\x05\x02\x01\x01"


async def test_disabling_a_sub_user_ends_its_open_cached_tunnel(origin) -> None:
    async def scenario(run: Run, port: int) -> list[bytes]:
        target = f"127.0.0.1:{port}"
        out = await repeat(run, [connect_msg(target, "sub")], run.http, 2)
        reader, writer = await open_to(run.http)  # the cache opens it
        writer.write(connect_msg(target, "sub"))
        held = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 3)
        change_sub(run, "svc1", 1, enabled=False)
        run.gateway.meter.harvest()  # the check after it ends the tunnel (subusers.cut_refused's way)
        held += await asyncio.wait_for(reader.read(), 3)
        writer.close()
        out.append(held)
        out.append(await exchange(run.http, [connect_msg(target, "sub")]))
        return [norm(o) for o in out]

    on = await both(scenario, origin.port)
    assert on[-2] == b"HTTP/1.1 200 Connection established\r\n\r\n" and on[-1].startswith(b"HTTP/1.1 407")


async def test_cached_sub_user_tunnels_count_for_it_and_its_service(origin) -> None:
    """The limiter's counts (reported to the other nodes, shown as open connections) of the sub-user
    and of its service follow its cached tunnels at the sweep, as Python's slots do."""

    async def scenario(run: Run, port: int) -> list[bytes]:
        target = f"127.0.0.1:{port}"
        await repeat(run, [connect_msg(target, "sub")], run.http, 2)
        tunnels, limiter = run.gateway.tunnels, run.gateway.ctx.limiter
        assert tunnels is not None
        held = []
        for _ in range(3):  # the same key: the cache's tunnels
            reader, writer = await open_to(run.http)
            writer.write(connect_msg(target, "sub"))
            await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 3)
            held.append(writer)
        tunnels.sweep()
        counts = [limiter.current("svc1/1"), limiter.current("svc1")]
        for writer in held:
            writer.close()
        await until(lambda: tunnels.stats()["connections"] == 0)
        tunnels.sweep()
        counts += [limiter.current("svc1/1"), limiter.current("svc1")]
        return [str(counts).encode()]

    assert await both(scenario, origin.port) == [b"[3, 3, 0, 0]"]
