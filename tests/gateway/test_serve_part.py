"""The gateway inside `proxyplane serve` (cli/gateway.gateway_part, issue 30): loopback is not opened by
serve (no implied development setting), the demo origin PROXYPLANE_DEMO_ORIGIN is the one loopback
destination let through, the API's port is refused, and PROXYPLANE_GATEWAY_METRICS_PORT is served."""

from __future__ import annotations

import json

import httpx
import pytest

from proxyplane.cli.gateway import gateway_part
from proxyplane.platform import Platform
from tests.observability.support import raw_get, static_service
from tests.support import Account

from .clients import basic, http_get
from .conftest import free_port

pytestmark = pytest.mark.anyio


async def test_serve_gateway_opens_only_the_demo_origin_and_serves_its_metrics(
    client: httpx.AsyncClient,
    platform: Platform,
    account: Account,
    origin,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    svc = await static_service(client, platform, account)
    demo_port, metrics_port = free_port([]), free_port([])
    env = {
        "HTTP_PORT": "-1",
        "HTTPS_PORT": "-1",
        "SOCKS_PORT": "-1",
        "STATIC_HTTP_PORT": str(free_port([svc.exit_ip])),
        "STATIC_HTTPS_PORT": "-1",
        "STATIC_SOCKS_PORT": "-1",
        "METRICS_PORT": str(metrics_port),
        "IN_SERVE": "true",
    }
    for name, value in env.items():
        monkeypatch.setenv(f"PROXYPLANE_GATEWAY_{name}", value)
    monkeypatch.delenv("PROXYPLANE_GATEWAY_DEV_ALLOW_LOOPBACK", raising=False)
    monkeypatch.setenv("PROXYPLANE_DEMO_ORIGIN", f"127.0.0.1:{demo_port}")
    async with gateway_part(platform) as node:
        assert node is not None
        proxy = (svc.exit_ip, int(env["STATIC_HTTP_PORT"]))
        auth = basic(svc.login, svc.password)
        status, _, body = await http_get(proxy, f"http://127.0.0.1:{demo_port}/hello", auth)
        assert status == 200, body
        answer = json.loads(body)
        assert answer["client_ip"] == svc.exit_ip and answer["path"] == "/hello"
        status, _, body = await http_get(proxy, f"http://localhost:{origin.port}/other", auth)
        assert status == 403 and origin.connections == 0  # any other loopback destination
        api = platform.settings.api_port
        status, _, _ = await http_get(proxy, f"http://127.0.0.1:{api}/api/v1/openapi.json", auth)
        assert status == 403
        status, _, _ = await http_get(proxy, f"http://127.0.0.1:{metrics_port}/metrics", auth)
        assert status == 403
        assert metrics_port in node.gateway.ctx.destinations.own_ports
        assert (await raw_get(metrics_port, "/readyz"))[0] == 200
        # the host's own addresses (the node's local prefixes) are refused like loopback
        assert node.gateway.ctx.destinations.host == tuple(node.addresses.prefixes or ())
        assert "gateway_" in (await raw_get(metrics_port, "/metrics"))[1]
    out = capsys.readouterr().out
    assert f"demo origin    http://127.0.0.1:{demo_port}/" in out
    assert f"gateway        metrics http://127.0.0.1:{metrics_port}/metrics" in out
