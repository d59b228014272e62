"""Round trip on loopback: buy through legacy POST product, see it in v1, change the proxy password
through legacy PUT, then feed the legacy iplist lines to curl against a real gateway node."""

from __future__ import annotations

import asyncio
import base64
import ipaddress
import shutil

import httpx
import pytest

from proxyplane.core.gateway_settings import GatewaySettings
from proxyplane.gateway.node import GatewayNode
from proxyplane.platform import Platform
from tests.adapters.legacy.support import add_product, auth
from tests.domains.stock.support import fresh_stock
from tests.gateway.conftest import free_port, origin  # noqa: F401  (the origin fixture)
from tests.support import Account, bearer

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("curl") is None, reason="needs curl")]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def original_http_auth(line: str) -> str:
    """A customer's converter written for the original API: `ip:port@login:password` -> a proxy URL.
    Rejects any other shape (as the real one did)."""
    where, at, credentials = line.partition("@")
    host, colon, port = where.partition(":")
    login, colon2, password = credentials.partition(":")
    if not (at and colon and colon2 and port.isdigit() and login and password):
        raise ValueError(f"not ip:port@login:password: {line!r}")
    ipaddress.IPv4Address(host)
    return f"http://{login}:{password}@{host}:{port}"


async def curl(proxy_line: str, url: str) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(
        "curl",
        "-s",
        "-o",
        "-",
        "-w",
        "\n%{http_code}",
        "--max-time",
        "5",
        "-x",
        proxy_line,
        url,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    out, _ = await proc.communicate()
    body, _, code = out.decode().rpartition("\n")
    return int(code or 0), body


async def test_legacy_round_trip_through_the_gateway(
    client: httpx.AsyncClient,
    platform: Platform,
    account: Account,
    origin,  # noqa: F811
    tmp_path,
    monkeypatch,
) -> None:
    exits = await fresh_stock(platform, "proxy_personal", "MD", 1)
    pid, product = await add_product(platform, "proxy_personal", 300, {"ip_count": 1, "country": "MD"})
    await account.credit(1_000)
    r = await client.post(
        f"/api/product/{pid}",
        json={"clientid": str(account.customer_id), "setip": "127.0.0.1"},  # a numeric string, as PHP sends
        headers=auth(account),
    )
    assert r.status_code == 200, r.text
    made = r.json()
    assert made["ip"] == exits[0] and made["amount"] == 3.0
    key = await account.key()
    v1 = (await client.get("/api/v1/customer/services", headers=bearer(key))).json()["items"]
    svc = next(s for s in v1 if s["service_number"] == made["serviceId"])
    assert svc["status"] == "active" and svc["whitelist_ips"] == ["127.0.0.1"]

    settings = GatewaySettings(
        http_port=-1,
        https_port=-1,
        socks_port=-1,
        static_http_port=free_port(exits),
        static_https_port=-1,
        static_socks_port=free_port(exits),
        usage_flush_seconds=60,
        dev_allow_loopback=True,
    )
    monkeypatch.setenv("PROXYPLANE_GATEWAY_STATIC_HTTP_PORT", str(settings.static_http_port))
    monkeypatch.setenv("PROXYPLANE_GATEWAY_STATIC_SOCKS_PORT", str(settings.static_socks_port))
    new_password = "RoundTrip_42"
    body = {"password": base64.b64encode(new_password.encode()).decode()}
    r = await client.put(f"/api/service/{made['serviceId']}", json=body, headers=auth(account, "|"))
    assert (r.status_code, r.content) == (200, b'{"password":"Password changed successfully"}')
    shown = (
        await client.get(
            f"/api/v1/customer/services/{svc['service_id']}/proxy/auth?reveal=true", headers=bearer(key)
        )
    ).json()
    assert shown["password"] == new_password

    url = f"http://127.0.0.1:{origin.port}/legacy"
    node = GatewayNode(platform.db, platform.secrets, settings, home=tmp_path)
    await node.start()
    try:
        lines = {}
        for typel in ("http-auth", "http-ip", "socks-ip"):
            txt = (
                await client.get(f"/api/iplist/{typel}/txt/{made['serviceId']}", headers=auth(account))
            ).text
            [line] = txt.split("\r\n")[:-1]
            lines[typel] = line
        assert lines["http-auth"] == f"{exits[0]}:{settings.static_http_port}@{svc['login']}:{new_password}"
        lines["http-auth"] = original_http_auth(lines["http-auth"])
        for typel, line in lines.items():
            code, text = await curl(line, url)
            assert code == 200 and text.split()[0] == exits[0], (typel, line, code, text)
        # the old password no longer works (the bound IP is what lets the other lines in)
        r = await client.put(
            f"/api/service/{made['serviceId']}", json={"setip": "198.51.100.9"}, headers=auth(account)
        )
        assert r.status_code == 200
        stale = f"{svc['login']}:wrong-password@{exits[0]}:{settings.static_http_port}"
        for _ in range(40):
            code, _ = await curl(lines["http-ip"], url)
            if code == 407:
                break
            await asyncio.sleep(0.05)
        assert code == 407
        assert (await curl(stale, url))[0] == 407
        assert (await curl(lines["http-auth"], url))[0] == 200
    finally:
        await node.close()
