"""Anti-sharing on a real node (issue 32.5), on loopback with clients bound to distinct source addresses
(127.0.0.2, .3, .4), on both tunnel paths (Python relay and C engine): a max_client_ips=2 service serves
two addresses; the third is refused (HTTP and CONNECT 429 with `Proxy-Status: ...; error=client_ip_limit`,
SOCKS5 the failed-auth reply; metered as client_ip_limit) under refuse_new, and admitted, forgetting the
least recently seen address, under newest_wins; across two nodes the limit holds once the connection-count
refresh has carried the addresses (the same bound as connection limits)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from proxyplane.platform import Platform
from tests.domains.quotas.support import errors_of
from tests.domains.stock.support import fresh_stock
from tests.domains.subusers.support import make_service
from tests.support import Account

from .clients import basic, http_get, open_to, socks_connect
from .conftest import BACKENDS
from .test_store_static import eventually, node_settings, running_node

pytestmark = pytest.mark.anyio
PASSWORD = "service-password"  # tests/domains/subusers/support.make_service
A, B, C = "127.0.0.2", "127.0.0.3", "127.0.0.4"


@pytest.fixture(params=BACKENDS, ids=lambda b: "engine" if b[1] else "python")
def anyio_backend(request: Any) -> Any:
    return request.param


async def connect_from(proxy: tuple[str, int], target: str, auth: str, source: str) -> tuple[int, str, Any]:
    reader, writer = await open_to(proxy, source)
    writer.write(
        f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\nProxy-Authorization: {auth}\r\n\r\n".encode()
    )
    head = (await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 3)).decode("latin-1")
    return int(head.split(" ")[1]), head.lower(), writer


async def limited(platform: Platform, account: Account, policy: str) -> Any:
    params = {"exit_pool": "proxy_datacenter", "client_ip_limit": {"max": 2, "policy": policy}}
    return await make_service(platform, account, parameters=params)


async def test_refuse_new_refuses_a_third_address(
    platform: Platform, account: Account, tcp_echo: Any, tmp_path: Any
) -> None:
    await fresh_stock(platform, "proxy_datacenter", "US", 1)
    svc = await limited(platform, account, "refuse_new")
    auth = basic(svc.login, PASSWORD)
    target = f"127.0.0.1:{tcp_echo.port}"
    async with running_node(platform, node_settings(["127.0.0.1"]), tmp_path) as node:
        http = ("127.0.0.1", node.gateway.gateway_port("http"))
        socks = ("127.0.0.1", node.gateway.gateway_port("socks"))
        for source in (A, B, A):
            status, _, w = await connect_from(http, target, auth, source)
            assert status == 200, source
            w.close()
        status, head, w = await connect_from(http, target, auth, C)
        w.close()
        assert status == 429 and "proxy-status: proxyplane; error=client_ip_limit" in head
        status, headers, body = await http_get(http, f"http://{target}/", auth, source=C)
        assert status == 429 and b"client_ip_limit" in body and "client_ip_limit" in headers["proxy-status"]
        rep, _, _, w = await socks_connect(socks, "127.0.0.1", tcp_echo.port, svc.login, PASSWORD, source=C)
        w.close()
        assert rep == "auth-failed"
        rep, _, _, w = await socks_connect(socks, "127.0.0.1", tcp_echo.port, svc.login, PASSWORD, source=B)
        w.close()
        assert rep == 0  # a known address still serves
        await node.flush_usage()
    assert (await errors_of(platform, svc.service_id)).get("client_ip_limit", 0) >= 3


async def test_newest_wins_forgets_the_oldest(
    platform: Platform, account: Account, tcp_echo: Any, tmp_path: Any
) -> None:
    await fresh_stock(platform, "proxy_datacenter", "US", 1)
    svc = await limited(platform, account, "newest_wins")
    auth = basic(svc.login, PASSWORD)
    target = f"127.0.0.1:{tcp_echo.port}"
    async with running_node(platform, node_settings(["127.0.0.1"]), tmp_path) as node:
        http = ("127.0.0.1", node.gateway.gateway_port("http"))
        for source in (A, B, C):
            status, _, w = await connect_from(http, target, auth, source)
            assert status == 200, source
            w.close()
        assert set(node.table.client_ips.active(str(svc.service_id))) == {B, C}  # A forgotten


async def test_two_nodes_share_the_addresses(
    platform: Platform, account: Account, tcp_echo: Any, tmp_path: Any
) -> None:
    await fresh_stock(platform, "proxy_datacenter", "US", 1)
    svc = await limited(platform, account, "refuse_new")
    auth = basic(svc.login, PASSWORD)
    target = f"127.0.0.1:{tcp_echo.port}"
    settings = node_settings(["127.0.0.1"]).model_copy(update={"limit_refresh_seconds": 0.2})
    async with (
        running_node(platform, settings, tmp_path / "a") as a,
        running_node(platform, settings, tmp_path / "b") as b,
    ):
        on_a = ("127.0.0.1", a.gateway.gateway_port("http"))
        on_b = ("127.0.0.1", b.gateway.gateway_port("http"))
        for source in (A, B):
            status, _, w = await connect_from(on_a, target, auth, source)
            assert status == 200
            w.close()

        async def b_knows() -> bool:
            return len(b.table.client_ips.active(str(svc.service_id))) == 2

        waited = await eventually(b_knows, within=5.0)
        print(f"node b saw node a's 2 addresses after {waited:.2f} s (refresh 0.2 s)")
        status, _, w = await connect_from(on_b, target, auth, C)
        w.close()
        assert status == 429
        status, _, w = await connect_from(on_b, target, auth, A)  # known on the other node: served
        w.close()
        assert status == 200
