"""End to end on loopback: buy a static service through the REST API, then use it through gateway nodes
that read the same store (HTTP, CONNECT, SOCKS5; whitelist; password rotation; cancel; usage; two nodes)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from proxyplane.core.gateway_settings import GatewaySettings
from proxyplane.domains.stock.seed import seed_demo
from proxyplane.gateway.node import GatewayNode
from proxyplane.platform import Platform
from tests.domains.stock.support import fresh_stock
from tests.support import Account, bearer

from .clients import basic, connect_tunnel, open_to, read_response, request, socks_connect
from .conftest import free_port

pytestmark = pytest.mark.anyio
API = "/api/v1/customer/services"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Counted:
    """HTTP GETs through a proxy that add up the raw response bytes of successful ones."""

    def __init__(self) -> None:
        self.received = 0

    async def get(self, proxy: tuple[str, int], url: str, auth: str | None = None, source: str | None = None):
        try:
            reader, writer = await open_to(proxy, source)
        except OSError:
            return 0, {}, b""  # nothing listens there (any more)
        try:
            writer.write(request(url, auth))
            status, headers, body, raw = await read_response(reader)
        finally:
            writer.close()
        if status == 200:
            self.received += len(raw)
        return status, headers, body


async def eventually(check: Callable[[], Awaitable[bool]], within: float = 1.0) -> float:
    """Seconds until ``check()`` holds; fails when it does not within ``within``."""
    loop = asyncio.get_running_loop()
    start = loop.time()
    while True:
        if await check():
            return loop.time() - start
        if loop.time() - start > within:
            raise AssertionError(f"not true within {within} s")
        await asyncio.sleep(0.05)


@contextlib.asynccontextmanager
async def running_node(platform: Platform, settings: GatewaySettings, tmp_path) -> AsyncIterator[GatewayNode]:
    node = GatewayNode(platform.db, platform.secrets, settings, home=tmp_path)
    await node.start()
    try:
        yield node
    finally:
        await node.close()


def node_settings(exit_ips: list[str]) -> GatewaySettings:
    return GatewaySettings(
        http_port=0,
        https_port=-1,
        socks_port=0,
        static_http_port=free_port(exit_ips),
        static_https_port=-1,
        static_socks_port=free_port(exit_ips),
        usage_flush_seconds=60,
        dev_allow_loopback=True,
    )


async def buy(client: httpx.AsyncClient, platform: Platform, account: Account, name: str, **body) -> dict:
    async with platform.db.unit_of_work() as uow:
        await seed_demo(uow.session)
        await uow.commit()
    key = await account.key()
    await account.credit(5_000)
    items = (await client.get("/api/v1/customer/catalog?limit=100", headers=bearer(key))).json()["items"]
    product = next(p for p in items if p["name"].startswith(name))
    r = await client.post(API, json={"product_id": product["product_id"], **body}, headers=bearer(key))
    assert r.status_code == 201, r.text
    return {"key": key, **r.json()["service"]}


async def test_static_service_through_two_nodes(
    client: httpx.AsyncClient, platform: Platform, account: Account, origin, tmp_path, monkeypatch
) -> None:
    exits = await fresh_stock(platform, "proxy_personal", "US", 1)
    svc = await buy(client, platform, account, "Dedicated IP", parameters={}, whitelist_ips=["127.0.0.250"])
    key, sid = svc["key"], svc["service_id"]
    assert [i["ip"] for i in svc["ips"]] == exits
    exit_ip = exits[0]
    settings = node_settings(exits)
    for name in ("static_http_port", "static_socks_port", "static_https_port"):
        monkeypatch.setenv(f"PROXYPLANE_GATEWAY_{name.upper()}", str(getattr(settings, name)))
    ips = (await client.get(f"{API}/{sid}/proxy/ips", headers=bearer(key))).json()
    [ep] = ips["endpoints"]
    assert ep["http"] == f"{exit_ip}:{settings.static_http_port}" and ep["https"] is None
    host, port = ep["http"].split(":")
    http_ep = (host, int(port))
    socks_ep = (exit_ip, int(ep["socks5"].split(":")[1]))
    auth = (await client.get(f"{API}/{sid}/proxy/auth?reveal=true", headers=bearer(key))).json()
    masked = (await client.get(f"{API}/{sid}/proxy/auth", headers=bearer(key))).json()
    assert masked["password"] != auth["password"] and masked["login"] == auth["login"]
    login, password = auth["login"], auth["password"]
    url = f"http://127.0.0.1:{origin.port}/hello"
    counted = Counted()
    http_get = counted.get

    async with running_node(platform, settings, tmp_path) as node:
        platform.on("entitlements_changed", node.notify)
        # HTTP: the origin sees the service's exit IP
        status, _, body = await http_get(http_ep, url, basic(login, password))
        assert status == 200 and body.split()[0].decode() == exit_ip
        # CONNECT
        status, reader, writer = await connect_tunnel(
            http_ep, f"127.0.0.1:{origin.port}", basic(login, password)
        )
        assert status == 200
        writer.write(b"GET /tunnel HTTP/1.1\r\nHost: x\r\n\r\n")
        _, _, body, raw = await read_response(reader)
        assert body.split()[0].decode() == exit_ip
        counted.received += len(raw)
        writer.close()
        # SOCKS5
        rep, _, reader, writer = await socks_connect(socks_ep, "127.0.0.1", origin.port, login, password)
        assert rep == 0
        writer.write(b"GET /socks HTTP/1.1\r\nHost: x\r\n\r\n")
        _, _, body, raw = await read_response(reader)
        assert body.split()[0].decode() == exit_ip
        counted.received += len(raw)
        writer.close()
        # wrong password refused on both protocols
        assert (await http_get(http_ep, url, basic(login, "wrong")))[0] == 407
        assert (await socks_connect(socks_ep, "127.0.0.1", origin.port, login, "wrong"))[0] == "auth-failed"

        # whitelist: CIDR refused, a client IP added works without credentials, removal stops it
        r = await client.post(
            f"{API}/{sid}/proxy/whitelist", json={"ip": "127.0.0.0/24"}, headers=bearer(key)
        )
        assert r.status_code == 422
        r = await client.post(f"{API}/{sid}/proxy/whitelist", json={"ip": "127.0.0.77"}, headers=bearer(key))
        assert r.status_code == 200 and r.json()["ips"] == ["127.0.0.250", "127.0.0.77"]

        async def whitelisted() -> bool:
            return (await http_get(http_ep, url, source="127.0.0.77"))[0] == 200

        await eventually(whitelisted)
        r = await client.delete(f"{API}/{sid}/proxy/whitelist?ip_or_cidr=127.0.0.77", headers=bearer(key))
        assert r.status_code == 200 and r.json()["ips"] == ["127.0.0.250"]

        async def not_whitelisted() -> bool:
            return (await http_get(http_ep, url, source="127.0.0.77"))[0] == 407

        await eventually(not_whitelisted)

        # usage: totals equal the metered traffic; the CSV sums to the same totals
        await node.flush_usage()
        window = {
            "start": (datetime.now(UTC) - timedelta(minutes=5)).isoformat(),
            "end": (datetime.now(UTC) + timedelta(minutes=1)).isoformat(),
        }
        u = (await client.get(f"{API}/{sid}/usage", params=window, headers=bearer(key))).json()
        assert u["bytes_up"] == origin.bytes_in and u["bytes_down"] == counted.received
        assert u["requests"] == len(origin.seen)
        # the refusals above are the service's only errors, each under its reason (issue 22.4): the two
        # wrong passwords, and 127.0.0.77's tries while it was not (yet / any more) whitelisted
        e = (await client.get(f"{API}/{sid}/usage/errors", params=window, headers=bearer(key))).json()
        by_reason = e["errors_by_category"]
        assert set(by_reason) == {"auth_wrong_password", "auth_not_whitelisted"}, by_reason
        assert by_reason["auth_wrong_password"] == 2 and sum(by_reason.values()) == u["errors"]
        csv = (await client.get(f"{API}/{sid}/usage/export", params=window, headers=bearer(key))).json()
        lines = [ln.split(",") for ln in csv["csv"].strip().split("\n")[1:]]
        assert (
            sum(int(x[4]) for x in lines) == u["bytes_up"]
            and sum(int(x[5]) for x in lines) == u["bytes_down"]
        )
        assert sum(int(x[2]) for x in lines) == u["requests"] and sum(int(x[6]) for x in lines) == u["errors"]
        # refusals before any destination was named have no host; they carry no traffic
        assert {x[1] for x in lines} == {"127.0.0.1", ""}
        assert all(x[2:6] == ["0", "0", "0", "0"] for x in lines if x[1] == "")
        assert (
            await client.get(f"{API}/{sid}/usage", params={"start": window["start"]}, headers=bearer(key))
        ).status_code == 422

        # a second node (no in-process signal: it polls the store) sees changes within a second
        settings_b = node_settings(exits)
        async with running_node(platform, settings_b, tmp_path) as _node_b:
            http_b = (exit_ip, settings_b.static_http_port)
            assert (await http_get(http_b, url, basic(login, password)))[0] == 200
            # password rotation: returned once; the same rotation_key again changes nothing
            body = {"rotate_password": True, "rotation_key": "rot-1"}
            first = (await client.put(f"{API}/{sid}/proxy/auth", json=body, headers=bearer(key))).json()
            assert first["password_rotated"] and first["password"] != password
            again = (await client.put(f"{API}/{sid}/proxy/auth", json=body, headers=bearer(key))).json()
            assert not again["password_rotated"] and again["password"] != first["password"]
            shown = (await client.get(f"{API}/{sid}/proxy/auth?reveal=true", headers=bearer(key))).json()
            assert shown["password"] == first["password"]

            async def old_refused_everywhere() -> bool:
                a = (await http_get(http_ep, url, basic(login, password)))[0]
                b = (await http_get(http_b, url, basic(login, password)))[0]
                return a == b == 407

            await eventually(old_refused_everywhere)
            assert (await http_get(http_b, url, basic(login, first["password"])))[0] == 200
            # cancel: refused for new connections on both nodes
            assert (await client.post(f"{API}/{sid}/cancel", headers=bearer(key))).status_code == 200

            async def refused_everywhere() -> bool:
                a = (await http_get(http_ep, url, basic(login, first["password"])))[0]
                b = (await http_get(http_b, url, basic(login, first["password"])))[0]
                return a != 200 and b != 200

            await eventually(refused_everywhere)
