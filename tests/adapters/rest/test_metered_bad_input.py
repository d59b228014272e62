"""Issue 32's bad input on the REST door for a sub-user's own limits (the service's own are in
test_client_ip_limit.py, bad GB in test_quotas.py, the operator's quota change in
tests/adapters/admin_api/test_quota_set.py): max_client_ips of 0 or above its cap, a speed limit of 0 or
below 1 kB/s and an unknown policy are 422 naming the field, on create and on update, and change nothing."""

from __future__ import annotations

import httpx
import pytest

from proxyplane.domains.connections.client_ips import MAX_CLIENT_IPS
from proxyplane.platform import Platform
from tests.domains.subusers.support import make_service
from tests.support import Account, bearer

pytestmark = pytest.mark.anyio
API = "/api/v1/customer/services"
BAD = [
    ({"max_client_ips": 0}, "max_client_ips"),
    ({"max_client_ips": MAX_CLIENT_IPS + 1}, "max_client_ips"),
    ({"speed_limit_bps": 0}, "speed_limit_bps"),
    ({"speed_limit_bps": 999}, "speed_limit_bps"),
    ({"client_ip_policy": "oldest_wins"}, "client_ip_policy"),
]


async def test_a_subusers_own_limits_out_of_range_are_422_naming_the_field(
    client: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    svc = await make_service(platform, account, max_connections=10)
    base, h = f"{API}/{svc.service_id}/subusers", bearer(await account.key())
    for body, field in BAD:
        r = await client.post(base, json=body, headers=h)
        assert r.status_code == 422 and field in r.text, (body, r.text)
    assert (await client.get(base, headers=h)).json()["items"] == []  # none was made

    made = await client.post(base, json={"max_client_ips": 2, "speed_limit_bps": 50_000}, headers=h)
    assert made.status_code == 201, made.text
    one = f"{base}/{made.json()['subuser_id']}"
    for body, field in BAD:
        r = await client.patch(one, json=body, headers=h)
        assert r.status_code == 422 and field in r.text, (body, r.text)
    got = (await client.get(one, headers=h)).json()
    limits = (got["max_client_ips"], got["client_ip_policy"], got["speed_limit_bps"])
    assert limits == (2, "refuse_new", 50_000)
