"""The legacy API on its own port (PROXYPLANE_LEGACY_PORT): a real HTTP server on loopback."""

from __future__ import annotations

import socket

import httpx
import pytest

from proxyplane.adapters.legacy import legacy_port
from proxyplane.adapters.legacy.server import legacy_parts, serve_legacy
from proxyplane.platform import Platform
from tests.adapters.legacy.support import auth
from tests.support import Account

pytestmark = pytest.mark.anyio


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_separate_port_serves_the_same_data(platform: Platform, account: Account) -> None:
    port = _free_port()
    await account.credit(250)
    async with serve_legacy(platform, port):
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as http:
            r = await http.get("/api/billing/credit", headers=auth(account, "|"))
            assert (r.status_code, r.content) == (200, b'{"credit":2.50}')
            r = await http.get("/api/clients")
            assert (r.status_code, r.content) == (401, b"Unauthenticated")
            assert (await http.get("/api/v1/customer/me")).status_code == 404  # legacy only on this port


async def test_port_setting(monkeypatch: pytest.MonkeyPatch, platform: Platform) -> None:
    monkeypatch.delenv("PROXYPLANE_LEGACY_PORT", raising=False)
    assert legacy_port() is None and legacy_parts(platform) == []
    monkeypatch.setenv("PROXYPLANE_LEGACY_PORT", "18099")
    assert legacy_port() == 18099 and len(legacy_parts(platform)) == 1
