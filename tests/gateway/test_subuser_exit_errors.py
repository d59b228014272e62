"""Upstream failures per exit IP per sub-user (issue 18), end to end on loopback: a sub-user's refused
upstream connections through a real gateway node are listed by the usage errors operation with its
sub-user filter in the same shape as the service's (errors_by_exit_ip), the sub-users' lists sum to the
service's, and a sub-user without failures lists none."""

from __future__ import annotations

import socket
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from proxyplane.platform import Platform
from tests.domains.stock.support import fresh_stock
from tests.domains.subusers.support import make_service
from tests.support import Account, bearer

from .clients import basic, connect_tunnel, http_get, socks_connect
from .conftest import BACKENDS
from .test_store_static import API, node_settings, running_node
from .test_subusers import add_subusers

pytestmark = pytest.mark.anyio


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # nothing listens here once closed: connections are refused


@pytest.mark.parametrize("anyio_backend", BACKENDS[-1:], ids=["engine"])  # the production path only
async def test_exit_ip_failures_per_subuser(
    client: httpx.AsyncClient, platform: Platform, account: Account, origin: Any, tmp_path: Any
) -> None:
    await fresh_stock(platform, "proxy_datacenter", "US", 2)
    svc = await make_service(platform, account, parameters={"exit_pool": "proxy_datacenter"})
    key, sid = await account.key(), str(svc.service_id)
    subs = await add_subusers(client, key, sid, {"a": {}, "b": {}})
    dead = closed_port()
    async with running_node(platform, node_settings(["127.0.0.1"]), tmp_path) as node:
        http = ("127.0.0.1", node.gateway.gateway_port("http"))
        socks = ("127.0.0.1", node.gateway.gateway_port("socks"))
        _a_id, a_login, a_pw = subs["a"]
        assert (await http_get(http, f"http://127.0.0.1:{dead}/", basic(a_login, a_pw)))[0] == 502
        status, _, w = await connect_tunnel(http, f"127.0.0.1:{dead}", basic(a_login, a_pw))
        w.close()
        assert status == 502
        rep, _, _, w = await socks_connect(socks, "127.0.0.1", dead, a_login, a_pw)
        w.close()
        assert rep == 5  # connection refused
        b_login, b_pw = subs["b"][1], subs["b"][2]
        assert (await http_get(http, f"http://127.0.0.1:{origin.port}/x", basic(b_login, b_pw)))[0] == 200
        await node.flush_usage()

    now = datetime.now(UTC)
    window = {
        "start": (now - timedelta(minutes=5)).isoformat(),
        "end": (now + timedelta(minutes=1)).isoformat(),
    }

    async def errors(**extra: Any) -> dict[str, Any]:
        r = await client.get(f"{API}/{sid}/usage/errors", params=window | extra, headers=bearer(key))
        assert r.status_code == 200, r.text
        return dict(r.json())

    whole, a, b = await errors(), await errors(subuser_id=subs["a"][0]), await errors(subuser_id=subs["b"][0])
    assert a["subuser_id"] == subs["a"][0] and a.keys() == whole.keys()
    assert sum(Counter(c)["refused"] for c in a["errors_by_exit_ip"].values()) == 3
    assert a["errors_by_exit_ip"] == whole["errors_by_exit_ip"] and b["errors_by_exit_ip"] == {}
    assert a["errors_by_category"] == {"refused": 3} and b["errors_by_category"] == {}
