"""Proxy login failures by reason (issue 22.4), end to end on loopback: a static service bought through the
legacy API, refused through a real gateway node over real sockets (a wrong password over HTTP, an unknown
login over SOCKS5, a client IP on no whitelist), then read back from the service's usage errors. The
refusal texts never tell a stranger whether a login exists."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx
import pytest

from proxyplane.platform import Platform
from tests.adapters.legacy.support import buy, static_product
from tests.support import Account, bearer

from .clients import basic, http_get, socks_connect
from .test_store_static import API, node_settings, running_node

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_wrong_password_unknown_login_and_not_whitelisted_count_for_the_service(
    client: httpx.AsyncClient, platform: Platform, account: Account, origin, tmp_path
) -> None:
    pid, _ = await static_product(platform, "MD", ips=1)
    await account.credit(1_000)
    made = await buy(client, account, pid, setip="127.0.0.1")  # whitelists 127.0.0.1, not 127.0.0.9
    key = await account.key()
    v1 = (await client.get(f"{API}?limit=100", headers=bearer(key))).json()["items"]
    svc = next(s for s in v1 if s["service_number"] == made["serviceId"])
    sid, exit_ip = svc["service_id"], svc["ips"][0]["ip"]
    login = svc["login"]
    settings = node_settings([exit_ip])
    url = f"http://127.0.0.1:{origin.port}/x"

    async with running_node(platform, settings, tmp_path) as node:
        http = (exit_ip, settings.static_http_port)
        wrong = await http_get(http, url, basic(login, "not-the-password"))
        unknown = await http_get(http, url, basic("nosuchlogin", "whatever"))
        assert wrong[0] == unknown[0] == 407
        assert wrong[2] == unknown[2]  # the same words: nothing says the first login exists
        rep, _, _, writer = await socks_connect(
            (exit_ip, settings.static_socks_port), "127.0.0.1", origin.port, "nosuchlogin", "x"
        )
        assert rep == "auth-failed"
        writer.close()
        status, _, body = await http_get(http, url, source="127.0.0.9")
        assert status == 407 and b"whitelist" in body
        assert b"from 127.0.0.9: whitelist that address" in body  # issue 30 (15): the address it saw
        await node.flush_usage()

    now = datetime.now(UTC)
    window = {
        "start": (now - timedelta(minutes=5)).isoformat(),
        "end": (now + timedelta(minutes=1)).isoformat(),
    }
    errors = (await client.get(f"{API}/{sid}/usage/errors", params=window, headers=bearer(key))).json()
    assert errors["errors_by_category"] == {
        "auth_wrong_password": 1,
        "auth_unknown_login": 2,
        "auth_not_whitelisted": 1,
    }
