"""MCP's rotating connection details follow the gateway's configuration (issue 22.2), not the copy a
product stored (see tests/adapters/rest/test_rotating_ports.py for v1, legacy and the dashboard)."""

from __future__ import annotations

import httpx
import pytest
from fastapi import FastAPI

from proxyplane.domains.services import service as services
from proxyplane.platform import Platform
from tests.adapters.legacy.support import buy, rotating_product
from tests.adapters.mcp.conftest import mcp_client
from tests.support import Account

pytestmark = pytest.mark.anyio


async def test_mcp_proxy_config_reads_the_settings(
    app: FastAPI,
    rest: httpx.AsyncClient,
    platform: Platform,
    account: Account,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PROXYPLANE_GATEWAY_HOST", "127.0.0.3")
    monkeypatch.setenv("PROXYPLANE_GATEWAY_HTTP_PORT", "28282")
    monkeypatch.setenv("PROXYPLANE_GATEWAY_SOCKS_PORT", "21282")
    await account.credit(10_000)
    made = await buy(rest, account, (await rotating_product(platform))[0], setip=None)  # stored 8080/1080
    async with platform.db.unit_of_work(write=False) as uow:
        svc = await services.get_by_number(uow.session, made["serviceId"])
        assert svc is not None
    async with mcp_client(app, await account.key({"services:read"})) as client:
        result = await client.call_tool("get_proxy_config", {"service_id": str(svc.service_id)})
    assert result.is_error is False
    got = result.structured_content or {}
    assert (got["host"], got["http_port"], got["socks5_port"]) == ("127.0.0.3", 28282, 21282)
