"""End to end on loopback: a rotating service bought through the REST API, served by two gateway nodes on
the same store: session modes, sticky sessions listed / rotated / ended / purged through the API."""

from __future__ import annotations

from datetime import datetime

import pytest

from tests.support import bearer

from .clients import basic, http_get
from .test_store_static import API, buy, eventually, node_settings, running_node

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_rotating_sticky_sessions_across_nodes(client, platform, account, origin, tmp_path) -> None:
    svc = await buy(client, platform, account, "Rotating datacenter", parameters={})
    key, sid = svc["key"], svc["service_id"]
    auth = (await client.get(f"{API}/{sid}/proxy/auth?reveal=true", headers=bearer(key))).json()
    login, password = auth["login"], auth["password"]
    config = (await client.get(f"{API}/{sid}/proxy/config", headers=bearer(key))).json()
    assert (
        config["host"] == "127.0.0.1" and config["session_mode"] == "rotating" and "us" in config["countries"]
    )
    assert (await client.get(f"{API}/{sid}/proxy/ips", headers=bearer(key))).json()["endpoints"] == []
    url = f"http://127.0.0.1:{origin.port}/"

    async with (
        running_node(platform, node_settings(["127.0.0.1"]), tmp_path) as a,
        running_node(platform, node_settings(["127.0.0.1"]), tmp_path) as b,
    ):
        gw_a = ("127.0.0.1", a.gateway.gateway_port("http"))
        gw_b = ("127.0.0.1", b.gateway.gateway_port("http"))

        async def exit_ip(gw, username: str = login) -> str:
            status, _, body = await http_get(gw, url, basic(username, password))
            assert status == 200, body
            return body.split()[0].decode()

        # rotating: new exit IPs per request
        assert len({await exit_ip(gw_a) for _ in range(12)}) > 1
        # a sid in the username is sticky; the session shows in the API within a second
        first = await exit_ip(gw_a, f"{login}-session-abc-ttl-5m")
        assert {await exit_ip(gw_a, f"{login}-session-abc-ttl-5m") for _ in range(4)} == {first}

        async def listed() -> bool:
            r = await client.get(f"{API}/{sid}/proxy/sticky/sessions", headers=bearer(key))
            return [(s["sid"], s["exit_ip"]) for s in r.json()["sessions"]] == [("abc", first)]

        await eventually(listed)
        # the other node learns the session from the store
        await eventually(lambda: _same(exit_ip(gw_b, f"{login}-session-abc"), first))
        # rotate through the API: a new exit IP on both nodes within a second, kept afterwards
        r = await client.post(f"{API}/{sid}/proxy/sticky/sessions/abc/rotate", headers=bearer(key))
        assert r.status_code == 200 and r.json()["exit_ip"] != first
        new = r.json()["exit_ip"]
        await eventually(lambda: _same(exit_ip(gw_a, f"{login}-session-abc"), new))
        await eventually(lambda: _same(exit_ip(gw_b, f"{login}-session-abc"), new))
        assert {await exit_ip(gw_a, f"{login}-session-abc") for _ in range(3)} == {new}
        # delete one session (204), unknown sid 404, purge ends the rest
        r = await client.delete(f"{API}/{sid}/proxy/sticky/sessions/abc", headers=bearer(key))
        assert r.status_code == 204 and r.content == b""
        assert (
            await client.delete(f"{API}/{sid}/proxy/sticky/sessions/abc", headers=bearer(key))
        ).status_code == 404
        await exit_ip(gw_a, f"{login}-session-x1")
        await exit_ip(gw_a, f"{login}-session-x2")

        async def two_listed() -> bool:
            r = await client.get(f"{API}/{sid}/proxy/sticky/sessions", headers=bearer(key))
            return len(r.json()["sessions"]) == 2

        await eventually(two_listed)
        r = await client.post(f"{API}/{sid}/proxy/sticky/purge", headers=bearer(key))
        assert r.status_code == 200 and r.json()["purged"] == 2
        assert (await client.get(f"{API}/{sid}/proxy/sticky/sessions", headers=bearer(key))).json()[
            "sessions"
        ] == []

        # modes and TTL
        mode = f"{API}/{sid}/proxy/sticky/mode"
        assert (await client.put(mode, json={"mode": "pinned"}, headers=bearer(key))).status_code == 422
        assert (await client.put(mode, json={"mode": "chaos"}, headers=bearer(key))).status_code == 422
        r = await client.put(mode, json={"mode": "pinned", "pin": new}, headers=bearer(key))
        assert r.status_code == 200 and r.json()["mode"] == "pinned"

        async def pinned_everywhere() -> bool:
            return {await exit_ip(gw_a), await exit_ip(gw_b)} == {new}

        await eventually(pinned_everywhere)
        ttl = f"{API}/{sid}/proxy/sticky/ttl"
        assert (await client.put(ttl, json={"ttl_minutes": 1441}, headers=bearer(key))).status_code == 422
        r = await client.put(ttl, json={"ttl_minutes": 15}, headers=bearer(key))
        assert r.status_code == 200 and r.json()["ttl_minutes"] == 15
        r = await client.put(mode, json={"mode": "sticky"}, headers=bearer(key))
        assert (await client.get(mode, headers=bearer(key))).json() == {
            "service_id": sid,
            "mode": "sticky",
            "pin": None,
            "ttl_minutes": 15,
        }

        async def sticky_default() -> bool:
            r = await client.get(f"{API}/{sid}/proxy/sticky/sessions", headers=bearer(key))
            s = r.json()["sessions"]
            return len(s) == 1 and s[0]["sid"] == "default"

        await eventually(lambda: _mode_is(a, sid, "sticky"))
        ips = {await exit_ip(gw_a) for _ in range(4)}
        assert len(ips) == 1
        await eventually(sticky_default)
        [s] = (await client.get(f"{API}/{sid}/proxy/sticky/sessions", headers=bearer(key))).json()["sessions"]
        assert s["exit_ip"] in ips
        started = datetime.fromisoformat(s["started_at"])
        expires = datetime.fromisoformat(s["expires_at"])
        assert (expires - started).total_seconds() == 900


async def _same(awaitable, expected: str) -> bool:
    return await awaitable == expected


async def _mode_is(node, service_id: str, mode: str) -> bool:
    entry = node.table.get(service_id)
    return entry is not None and entry.session_mode == mode
