"""Proxy-password guessing throttled per source address (issue 30.2) on real loopback sockets, on both
tunnel paths (the C engine under uvloop, the Python protocol classes under asyncio): past the burst every
login from that address is refused, even a correct one, while another address still gets in."""

from __future__ import annotations

import asyncio

import pytest

from proxyplane.core.throttling import Policy
from proxyplane.gateway.auth_throttle import ProxyAuthThrottle, address_key

from .clients import basic, http_get, open_to, socks_connect

pytestmark = pytest.mark.anyio
BURST = 3


def small(env) -> None:
    env.gateway.ctx.auth_throttle = ProxyAuthThrottle(Policy("proxy-ip", burst=BURST, drain_seconds=600))


async def socks_login(env, source: str, password: str, origin) -> str | int:
    rep, _, _, writer = await socks_connect(
        env.socks, "127.0.0.1", origin.port, "rot", password, source=source
    )
    writer.close()
    return rep


async def test_socks5_guessing_is_refused_per_source_address(env, origin) -> None:
    small(env)
    attacker, other = "127.0.3.1", "127.0.3.2"
    for _ in range(BURST):
        assert await socks_login(env, attacker, "wrong", origin) == "auth-failed"
    assert await socks_login(env, attacker, "pw", origin) == "auth-failed"  # throttled: not even checked
    assert await socks_login(env, other, "pw", origin) == 0  # another address: served
    assert env.gateway.ctx.unattributed_errors["auth_throttled"] == 1


async def test_http_guessing_is_refused_per_source_address(env, origin) -> None:
    small(env)
    url = f"http://127.0.0.1:{origin.port}/x"
    attacker, other = "127.0.3.3", "127.0.3.4"
    for _ in range(BURST):
        status, _, body = await http_get(env.http, url, basic("rot", "wrong"), source=attacker)
        assert status == 407 and b"wrong proxy login or password" in body
    status, _, body = await http_get(env.http, url, basic("rot", "pw"), source=attacker)
    assert status == 407 and b"too many failed proxy logins from this address" in body
    assert (await http_get(env.http, url, basic("rot", "pw"), source=other))[0] == 200


async def connect_status(env, source: str, password: str, target: str) -> int:
    reader, writer = await open_to(env.http, source)
    try:
        auth = basic("rot", password)
        writer.write(
            f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\nProxy-Authorization: {auth}\r\n\r\n".encode()
        )
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 3)
        return int(head.split(b" ")[1])
    finally:
        writer.close()


async def test_connect_guessing_is_refused_per_source_address(env, origin) -> None:
    small(env)
    target = f"127.0.0.1:{origin.port}"
    attacker, other = "127.0.3.5", "127.0.3.6"
    for _ in range(BURST):
        assert await connect_status(env, attacker, "wrong", target) == 407
    assert await connect_status(env, attacker, "pw", target) == 407  # throttled
    assert await connect_status(env, other, "pw", target) == 200


def test_address_keys() -> None:
    assert address_key("127.0.0.1") == "127.0.0.1"
    assert address_key("::ffff:127.0.0.1") == "127.0.0.1"
    assert address_key("::1") == "::/64"
