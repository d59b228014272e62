"""Exit-IP health end to end: upstream failures through one exit IP of a static service are metered per
exit IP, shown by the usage errors operation and by the legacy networkstatus/errors endpoint (recent
window); the healthy exit IP is not listed."""

from __future__ import annotations

import socket
import uuid
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from proxyplane.platform import Platform
from proxyplane.storage.models.gateway_health import UsageExitError
from tests.adapters.legacy.support import auth, buy, static_product
from tests.support import Account, bearer

from .clients import basic, connect_tunnel, http_get, socks_connect
from .test_store_static import API, node_settings, running_node

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # nothing listens here once closed: connections are refused


async def test_failing_exit_ip_is_listed_healthy_one_is_not(
    client: httpx.AsyncClient, platform: Platform, account: Account, origin, tmp_path
) -> None:
    pid, _ = await static_product(platform, "MD", ips=2)
    await account.credit(1_000)
    made = await buy(client, account, pid, setip="127.0.0.1")
    key = await account.key()
    v1 = (await client.get(f"{API}?limit=100", headers=bearer(key))).json()["items"]
    svc = next(s for s in v1 if s["service_number"] == made["serviceId"])
    sid = svc["service_id"]
    bad, good = [i["ip"] for i in svc["ips"]]
    creds = (await client.get(f"{API}/{sid}/proxy/auth?reveal=true", headers=bearer(key))).json()
    proxy_auth = basic(creds["login"], creds["password"])
    settings = node_settings([bad, good])
    dead = closed_port()

    async with running_node(platform, settings, tmp_path) as node:
        http_bad, http_good = (bad, settings.static_http_port), (good, settings.static_http_port)
        # through the bad exit IP the upstream refuses: HTTP, CONNECT and SOCKS5
        assert (await http_get(http_bad, f"http://127.0.0.1:{dead}/", proxy_auth))[0] == 502
        status, _, writer = await connect_tunnel(http_bad, f"127.0.0.1:{dead}", proxy_auth)
        assert status == 502
        writer.close()
        rep, _, _, writer = await socks_connect(
            (bad, settings.static_socks_port), "127.0.0.1", dead, creds["login"], creds["password"]
        )
        assert rep == 5  # connection refused
        writer.close()
        # the good exit IP works, and a failure that is not the exit IP's (a bad name) is not held against it
        status, _, body = await http_get(http_good, f"http://127.0.0.1:{origin.port}/ok", proxy_auth)
        assert status == 200 and body.split()[0].decode() == good
        assert (await http_get(http_good, "http://no-such-host.invalid/", proxy_auth))[0] == 502
        await node.flush_usage()

    now = datetime.now(UTC)
    window = {
        "start": (now - timedelta(minutes=5)).isoformat(),
        "end": (now + timedelta(minutes=1)).isoformat(),
    }
    errors = (await client.get(f"{API}/{sid}/usage/errors", params=window, headers=bearer(key))).json()
    assert errors["errors_by_exit_ip"] == {bad: {"refused": 3}}
    assert errors["errors_by_category"] == {"dns": 1, "refused": 3}
    r = await client.get(f"/api/networkstatus/errors/{made['serviceId']}", headers=auth(account))
    assert r.status_code == 200 and r.json() == [bad]

    # only the recent window counts: an old failure of the good IP is not listed, a fresh one is
    async with platform.db.unit_of_work() as uow:
        minute = (now - timedelta(minutes=30)).replace(second=0, microsecond=0)
        uow.session.add(
            UsageExitError(
                service_id=uuid.UUID(sid), minute=minute, exit_ip=good, category="timeout", count=4
            )
        )
        await uow.commit()
    r = await client.get(f"/api/networkstatus/errors/{made['serviceId']}", headers=auth(account))
    assert r.json() == [bad]
    async with platform.db.unit_of_work() as uow:
        minute = (now - timedelta(minutes=2)).replace(second=0, microsecond=0)
        uow.session.add(
            UsageExitError(
                service_id=uuid.UUID(sid), minute=minute, exit_ip=good, category="timeout", count=1
            )
        )
        await uow.commit()
    r = await client.get(f"/api/networkstatus/errors/{made['serviceId']}", headers=auth(account))
    assert r.json() == sorted([bad, good], key=lambda ip: tuple(int(x) for x in ip.split(".")))
