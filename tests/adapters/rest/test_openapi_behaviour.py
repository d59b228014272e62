"""Issue 30.6: where the OpenAPI description and the behaviour differed (schemathesis): confirm_spending is
a strict boolean; POST /customer/services' whitelist_ips states the IPv4 pattern the server enforces;
DELETE .../proxy/whitelist's ip_or_cidr is required (tests/adapters/rest/test_whitelist_delete.py)."""

from __future__ import annotations

import httpx
import pytest

from tests.support import Account, bearer

pytestmark = pytest.mark.anyio
API = "/api/v1"


async def test_confirm_spending_is_a_strict_boolean(client: httpx.AsyncClient, account: Account) -> None:
    h = bearer(await account.key())
    for value in (0, 1, "yes", "true"):
        body = {"name": "k", "scopes": ["tickets:read"], "confirm_spending": value}
        r = await client.post(f"{API}/customers/me/api-keys", json=body, headers=h)
        assert r.status_code == 422 and r.json()["detail"]["errors"][0]["loc"][-1] == "confirm_spending", (
            r.text
        )
    ok = {"name": "k", "scopes": ["tickets:read"], "confirm_spending": True}
    r = await client.post(f"{API}/customers/me/api-keys", json=ok, headers=h)
    assert r.status_code == 201 and r.json()["confirm_spending"] is True, r.text


async def test_create_service_whitelist_states_the_ipv4_pattern(
    client: httpx.AsyncClient, account: Account
) -> None:
    spec = (await client.get(f"{API}/openapi.json")).json()
    body = spec["paths"][f"{API}/customer/services"]["post"]["requestBody"]["content"]["application/json"]
    ref = body["schema"]["$ref"].rsplit("/", 1)[1]
    items = spec["components"]["schemas"][ref]["properties"]["whitelist_ips"]["items"]
    order = spec["components"]["schemas"]["OrderIn"]["properties"]["whitelist_ips"]["items"]
    assert items["pattern"] == order["pattern"] and items["type"] == "string"
