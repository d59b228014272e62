"""A sub-user's own anti-sharing and speed limits (issue 32.5, 32.6) on a real node, both tunnel paths:
set through REST (422 naming the field out of range), a sub-user with max_client_ips=2 refuses a third
client address (429 client_ip_limit) while its unlimited service still serves it, and a sub-user capped at
1 MB/s downloads at 1 MB/s within 10 % while its service is unlimited."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from proxyplane.platform import Platform
from tests.domains.stock.support import fresh_stock
from tests.domains.subusers.support import make_service
from tests.support import Account, bearer

from .clients import basic, open_to
from .conftest import BACKENDS
from .test_client_ips import A, B, C, connect_from
from .test_speed_limit import RATE, download
from .test_store_static import node_settings, running_node

pytestmark = pytest.mark.anyio
API = "/api/v1/customer/services"
PASSWORD = "service-password"  # tests/domains/subusers/support.make_service


@pytest.fixture(params=BACKENDS, ids=lambda b: "engine" if b[1] else "python")
def anyio_backend(request: Any) -> Any:
    return request.param


@pytest.fixture
async def sender() -> AsyncIterator[int]:
    """A TCP server that sends bytes as fast as it can to whoever connects."""
    chunk = b"s" * 65536

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError):
            while True:
                writer.write(chunk)
                await writer.drain()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    yield server.sockets[0].getsockname()[1]
    server.close()


async def rate_through(http: tuple[str, int], port: int, auth: str) -> float:
    reader, writer = await open_to(http, A)
    target = f"127.0.0.1:{port}"
    head = f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\nProxy-Authorization: {auth}\r\n\r\n"
    writer.write(head.encode())
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 3)
    assert head.startswith(b"HTTP/1.1 200"), head
    try:
        return await download(reader)
    finally:
        writer.close()


async def test_subuser_client_ip_limit_and_speed_cap(
    client: httpx.AsyncClient, platform: Platform, account: Account, tcp_echo: Any, sender: int, tmp_path: Any
) -> None:
    await fresh_stock(platform, "proxy_datacenter", "US", 1)
    svc = await make_service(platform, account, parameters={"exit_pool": "proxy_datacenter"})
    base, h = f"{API}/{svc.service_id}/subusers", bearer(await account.key())
    bad_inputs = (({"speed_limit_bps": 0}, "speed_limit_bps"), ({"max_client_ips": 5000}, "max_client_ips"))
    for bad, field in bad_inputs:
        r = await client.post(base, json=bad, headers=h)
        assert r.status_code == 422 and field in r.text, r.text
    r = await client.post(base, json={"max_client_ips": 2, "client_ip_policy": "refuse_new"}, headers=h)
    assert r.status_code == 201, r.text
    ips = r.json()
    assert (ips["max_client_ips"], ips["client_ip_policy"], ips["speed_limit_bps"]) == (2, "refuse_new", None)
    r = await client.post(base, json={"speed_limit_bps": RATE}, headers=h)
    assert r.status_code == 201 and r.json()["speed_limit_bps"] == RATE, r.text
    capped = r.json()
    r = await client.patch(f"{base}/{capped['subuser_id']}", json={"max_client_ips": 3}, headers=h)
    assert r.status_code == 200 and r.json()["max_client_ips"] == 3 and r.json()["speed_limit_bps"] == RATE

    target = f"127.0.0.1:{tcp_echo.port}"
    async with running_node(platform, node_settings(["127.0.0.1"]), tmp_path) as node:
        http = ("127.0.0.1", node.gateway.gateway_port("http"))
        sub_auth = basic(ips["login"], ips["password"])
        for source in (A, B, A):
            status, _, w = await connect_from(http, target, sub_auth, source)
            w.close()
            assert status == 200, source
        status, head, w = await connect_from(http, target, sub_auth, C)
        w.close()
        assert status == 429 and "error=client_ip_limit" in head
        status, _, w = await connect_from(http, target, basic(svc.login, PASSWORD), C)
        w.close()
        assert status == 200  # the service has no limit of its own: the third address is the sub-user's

        rate = await rate_through(http, sender, basic(capped["login"], capped["password"]))
        unlimited = await rate_through(http, sender, basic(svc.login, PASSWORD))
    print(f"sub-user cap {RATE} B/s: CONNECT {rate:.0f} B/s; its unlimited service {unlimited:.0f} B/s")
    assert 0.9 * RATE <= rate <= 1.1 * RATE
    assert unlimited > 3 * RATE
