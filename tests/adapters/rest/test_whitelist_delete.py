"""Whitelist delete takes the seed's `ip_or_cidr` and also `ip`, the name whitelist add uses (issue 22.10);
through REST and MCP's tool of the same operation."""

from __future__ import annotations

import httpx
import pytest

from proxyplane.platform import Platform
from tests.adapters.rest.growth_support import API, buy
from tests.adapters.rest.test_whitelist_limit import add, whitelist

pytestmark = pytest.mark.anyio


async def test_delete_by_ip_or_cidr_or_ip(client: httpx.AsyncClient, platform: Platform) -> None:
    b = await buy(client, platform, country="DK", count=8, stock=8)  # whitelist: 127.0.0.9
    url = f"{API}/customer/services/{b.sid}/proxy/whitelist"
    for ip in ("127.0.0.21", "127.0.0.22"):
        assert (await add(client, b, ip)).status_code == 200
    r = await client.delete(f"{url}?ip=127.0.0.21", headers=b.headers)
    assert r.status_code == 200 and "127.0.0.21" not in r.json()["ips"], r.text
    r = await client.delete(f"{url}?ip_or_cidr=127.0.0.22", headers=b.headers)
    assert r.status_code == 200 and "127.0.0.22" not in r.json()["ips"], r.text
    r = await client.delete(f"{url}?ip=127.0.0.9&ip_or_cidr=127.0.0.9", headers=b.headers)  # same: fine
    assert r.status_code == 200 and r.json()["ips"] == []
    assert (await add(client, b, "127.0.0.23")).status_code == 200
    missing = await client.delete(url, headers=b.headers)
    assert missing.status_code == 422 and missing.json()["detail"]["message"] == "ip_or_cidr: Field required"
    # both: ip_or_cidr is the one used (issue 30.6: it is the required parameter, ip its alternative name)
    both = await client.delete(f"{url}?ip=127.0.0.23&ip_or_cidr=127.0.0.24", headers=b.headers)
    assert both.status_code == 200 and both.json()["ips"] == ["127.0.0.23"], both.text
    spec = (await client.get(f"{API}/openapi.json")).json()
    params = spec["paths"][f"{API}/customer/services/{{service_id}}/proxy/whitelist"]["delete"]["parameters"]
    query = [p for p in params if p["in"] == "query"]
    assert [(p["name"], p["required"]) for p in query] == [("ip_or_cidr", True)]
    cidr = await client.delete(f"{url}?ip=127.0.0.0/24", headers=b.headers)
    assert cidr.status_code == 422
    assert (await whitelist(client, b))["ips"] == ["127.0.0.23"]
