"""Issue 36 (3) end to end on loopback: a rotating service bought through REST, one gateway node on the
store. A ``-ttl-24h`` session is listed by the sticky API with its TTL and expiry; a strict session whose
exit IP is retired from the stock answers 502 instead of moving; without the flag it moves."""

from __future__ import annotations

from datetime import datetime

import pytest
from sqlalchemy import update

from proxyplane.core.clock import utcnow
from proxyplane.gateway.routing import STRICT_GONE
from proxyplane.storage.models import StockIp
from tests.support import bearer

from .clients import basic, http_get
from .own_pool import loopback_addresses, own_pool
from .test_store_static import API, buy, eventually, node_settings, running_node

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_day_long_and_strict_sessions(client, platform, account, origin, tmp_path) -> None:
    svc = await buy(client, platform, account, "Rotating datacenter", parameters={})
    key, sid = svc["key"], svc["service_id"]
    auth = (await client.get(f"{API}/{sid}/proxy/auth?reveal=true", headers=bearer(key))).json()
    login, password = auth["login"], auth["password"]
    config = (await client.get(f"{API}/{sid}/proxy/config", headers=bearer(key))).json()
    assert "-ttl-" in config["username_syntax"] and "-strict-" in config["username_syntax"]
    url = f"http://127.0.0.1:{origin.port}/"
    addresses = loopback_addresses(4)
    async with (
        own_pool(platform, sid, dict.fromkeys(addresses, "US")),
        running_node(platform, node_settings(["127.0.0.1"]), tmp_path) as node,
    ):
        gw = ("127.0.0.1", node.gateway.gateway_port("http"))

        async def get(username: str) -> tuple[int, bytes]:
            status, _, body = await http_get(gw, url, basic(username, password))
            return status, body

        status, body = await get(f"{login}-session-day-ttl-24h")
        assert status == 200, body
        day_exit = body.split()[0].decode()
        assert day_exit in addresses

        async def listed() -> bool:
            r = await client.get(f"{API}/{sid}/proxy/sticky/sessions", headers=bearer(key))
            return any(s["sid"] == "day" for s in r.json()["sessions"])

        await eventually(listed, within=3.0)
        sessions = (await client.get(f"{API}/{sid}/proxy/sticky/sessions", headers=bearer(key))).json()
        [day] = [s for s in sessions["sessions"] if s["sid"] == "day"]
        assert day["exit_ip"] == day_exit and day["ttl_minutes"] == 1440
        expires = datetime.fromisoformat(day["expires_at"])
        assert abs((expires - datetime.fromisoformat(day["started_at"])).total_seconds() - 86400) < 1
        assert 86400 - 60 < day["expires_in_seconds"] <= 86400
        assert abs((expires - utcnow()).total_seconds() - day["expires_in_seconds"]) < 60

        strict, loose = f"{login}-session-keep-ttl-2h-strict-1", f"{login}-session-keep-ttl-2h"
        status, body = await get(strict)
        assert status == 200, body
        pinned = body.split()[0].decode()
        async with platform.db.unit_of_work(write=True) as uow:  # the exit leaves the pool
            retire = update(StockIp).where(StockIp.address == pinned).values(retired_at=utcnow())
            await uow.session.execute(retire)
            await uow.commit()

        async def gone() -> bool:
            entry = node.table.get(sid)
            return entry is not None and pinned not in entry.exit_ips

        await eventually(gone, within=3.0)
        status, body = await get(strict)
        assert status == 502 and STRICT_GONE.encode() in body
        # the same session without the flag moves to an exit still in the pool
        status, body = await get(loose)
        assert status == 200 and body.split()[0].decode() in set(addresses) - {pinned}
