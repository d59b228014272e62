"""max_client_ips over REST (issue 32.5): off by default, set with a policy, removed with null; 0, a value
above the cap and an unknown policy are 422 naming the field; another customer's service is 404; the
setting reaches the gateway's load of the service."""

from __future__ import annotations

import httpx
import pytest

from proxyplane.domains.connections.client_ips import MAX_CLIENT_IPS
from proxyplane.gateway.store_load import load_entries
from proxyplane.platform import Platform
from tests.domains.subusers.support import make_service
from tests.support import Account, bearer, make_account

pytestmark = pytest.mark.anyio
API = "/api/v1/customer/services"


async def test_set_and_read_the_client_ip_limit(
    client: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    svc = await make_service(platform, account, parameters={"exit_pool": "proxy_datacenter"})
    h = bearer(await account.key())
    url = f"{API}/{svc.service_id}/proxy/client-ip-limit"
    got = (await client.get(url, headers=h)).json()
    assert (got["max_client_ips"], got["policy"], got["window_seconds"]) == (None, "refuse_new", 600)

    for body, field in (
        ({"max_client_ips": 0}, "max_client_ips"),
        ({"max_client_ips": MAX_CLIENT_IPS + 1}, "max_client_ips"),
        ({"max_client_ips": 2, "policy": "oldest_wins"}, "policy"),
    ):
        r = await client.put(url, json=body, headers=h)
        assert r.status_code == 422 and field in r.text, r.text

    r = await client.put(url, json={"max_client_ips": 2, "policy": "newest_wins"}, headers=h)
    assert r.status_code == 200, r.text
    assert (r.json()["max_client_ips"], r.json()["policy"]) == (2, "newest_wins")
    assert (await client.get(url, headers=h)).json()["max_client_ips"] == 2
    async with platform.db.unit_of_work(write=False) as uow:
        loaded = await load_entries(uow.session, platform.secrets, [svc.service_id])
    (entry, _end) = loaded[svc.service_id]
    assert (entry.max_client_ips, entry.client_ip_policy) == (2, "newest_wins")

    other = bearer(await (await make_account(platform)).key())
    assert (await client.put(url, json={"max_client_ips": 3}, headers=other)).status_code == 404
    r = await client.put(url, json={"max_client_ips": None}, headers=h)
    assert r.status_code == 200 and r.json()["max_client_ips"] is None


async def test_set_and_read_the_speed_limit(
    client: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    """Issue 32.6: a speed limit of 0 (or below 1 kB/s, or above the cap) is 422 naming the field; a set
    one reaches the gateway's load of the service; null removes it."""
    from proxyplane.domains.connections import speed

    svc = await make_service(platform, account, parameters={"exit_pool": "proxy_datacenter"})
    h = bearer(await account.key())
    url = f"{API}/{svc.service_id}/proxy/speed-limit"
    assert (await client.get(url, headers=h)).json()["bytes_per_second"] is None
    for bad in (0, -1, speed.MIN_BPS - 1, speed.MAX_BPS + 1):
        r = await client.put(url, json={"bytes_per_second": bad}, headers=h)
        assert r.status_code == 422 and "bytes_per_second" in r.text, r.text
    r = await client.put(url, json={"bytes_per_second": 1_000_000}, headers=h)
    assert r.status_code == 200 and r.json()["bytes_per_second"] == 1_000_000, r.text
    async with platform.db.unit_of_work(write=False) as uow:
        loaded = await load_entries(uow.session, platform.secrets, [svc.service_id])
    assert loaded[svc.service_id][0].speed_bps == 1_000_000
    r = await client.put(url, json={"bytes_per_second": None}, headers=h)
    assert r.status_code == 200 and r.json()["bytes_per_second"] is None
