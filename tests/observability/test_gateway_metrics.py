"""Gateway metrics and health on the node's own port, after real traffic through a real node: every
counter moved by exactly what was sent (tunnels, bytes, refusals by reason, upstream errors, flushes)."""

from __future__ import annotations

import asyncio
import socket

import httpx
import pytest

from proxyplane.gateway import server as server_module
from proxyplane.gateway.node import GatewayNode
from proxyplane.platform import Platform
from tests.gateway.clients import basic, connect_tunnel, http_get
from tests.gateway.test_store_static import eventually, node_settings
from tests.support import Account

from .support import SCRAPED_WITHIN, delta, raw_get, scrape, static_service, value

pytestmark = pytest.mark.anyio
PAYLOAD = b"x" * 1000
ONLY = ("proxyplane_gateway_", "process_open_fds")  # the series this test reads (parsed alone)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def echo_server() -> asyncio.Server:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
        writer.close()

    return await asyncio.start_server(handle, "127.0.0.1", 0)


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("path", ["engine", "python"])
async def test_counters_move_by_what_was_sent(
    client: httpx.AsyncClient, platform: Platform, account: Account, tmp_path, path, monkeypatch
) -> None:
    if path == "python":  # the pure-Python protocols (where the C tunnel engine is not built)
        monkeypatch.setattr(server_module, "available", lambda: False)
    svc = await static_service(client, platform, account)
    settings = node_settings([svc.exit_ip]).model_copy(update={"metrics_port": 0})
    echo = await echo_server()
    echo_port = echo.sockets[0].getsockname()[1]
    node = GatewayNode(platform.db, platform.secrets, settings, home=tmp_path)
    await node.serve_metrics()
    assert node.metrics is not None
    port = node.metrics.bound_port
    try:
        assert await raw_get(port, "/livez") == (200, "ok\n")
        status, body = await raw_get(port, "/readyz")
        assert status == 503 and "access table" in body  # not started yet
        await node.start()
        assert (await raw_get(port, "/readyz"))[0] == 200
        proxy = (svc.exit_ip, settings.static_http_port)
        auth = basic(svc.login, svc.password)
        before = await scrape(port, ONLY)

        for _ in range(3):
            code, reader, writer = await connect_tunnel(proxy, f"127.0.0.1:{echo_port}", auth)
            assert code == 200
            writer.write(PAYLOAD)
            assert await asyncio.wait_for(reader.readexactly(len(PAYLOAD)), 3) == PAYLOAD
            writer.close()
        wrong = await http_get(proxy, "http://127.0.0.1:1/x", basic(svc.login, "not-the-password"))
        assert wrong[0] == 407
        code, _, writer = await connect_tunnel(proxy, f"127.0.0.1:{closed_port()}", auth)
        assert code == 502
        writer.close()

        async def settled() -> bool:
            now = await scrape(port, ONLY)
            return value(now, "proxyplane_gateway_admitted_connections_open") == 0 and delta(
                now, before, "proxyplane_gateway_bytes_total", direction="down"
            ) == 3 * len(PAYLOAD)

        await eventually(settled, within=SCRAPED_WITHIN)
        assert await node.flush_usage() >= 1
        after = await scrape(port, ONLY)
    finally:
        await node.close()
        echo.close()

    def moved(name: str, **labels: str) -> float:
        return delta(after, before, name, **labels)

    assert moved("proxyplane_gateway_connections_admitted_total") == 4  # 3 tunnels + the refused one
    assert moved("proxyplane_gateway_bytes_total", direction="up") == 3 * len(PAYLOAD)
    assert moved("proxyplane_gateway_bytes_total", direction="down") == 3 * len(PAYLOAD)
    assert moved("proxyplane_gateway_auth_failures_total", reason="auth_wrong_password") == 1
    assert moved("proxyplane_gateway_connections_refused_total", reason="auth_wrong_password") == 1
    assert moved("proxyplane_gateway_upstream_errors_total", category="refused") == 1
    assert moved("proxyplane_gateway_usage_flushes_total", outcome="ok") >= 1
    assert moved("proxyplane_gateway_usage_rows_flushed_total") >= 1
    assert value(after, "proxyplane_gateway_access_table_services") >= 1
    assert value(after, "proxyplane_gateway_store_poll_age_seconds") < 5
    assert value(after, "process_open_fds") > 0  # prometheus_client's process collector
    # no label names an IP, a login or a service
    text = "\n".join(f"{n}{dict(labels)}" for n, labels in after)
    for secret in (svc.exit_ip, svc.login, svc.password, svc.service_id):
        assert secret not in text
