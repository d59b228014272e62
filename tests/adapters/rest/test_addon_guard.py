"""Issue 30.7: buy_addon's price guard is `max_total_cents` like every other spending operation (REST,
MCP, dashboard); the older `expected_price_cents` still works and is marked deprecated in the schema; one
of the two is required. A bearer token that is not a key gets a message that says what it is."""

from __future__ import annotations

import httpx
import pytest

from proxyplane.platform import Platform
from tests.adapters.rest.growth_support import API, balance, buy
from tests.support import bearer

pytestmark = pytest.mark.anyio


async def test_max_total_cents_guards_buy_addon(client: httpx.AsyncClient, platform: Platform) -> None:
    b = await buy(client, platform, country="LU", count=8, stock=10)
    url = f"{API}/billing/services/{b.sid}/addons"
    offers = (await client.get(f"{url}/available", headers=b.headers)).json()["items"]
    price = next(o["price_cents"] for o in offers if o["addon_type"] == "extra_connections")
    bal = await balance(client, b.key)
    body = {"addon_type": "extra_connections", "idempotency_key": "g1"}
    low = await client.post(url, json={**body, "max_total_cents": price - 1}, headers=b.headers)
    assert low.status_code == 409, low.text
    detail = low.json()["detail"]
    assert detail["error"] == "price_changed" and detail["current_price_cents"] == price
    assert detail["max_total_cents"] == price - 1 and f"max_total_cents >= {price}" in detail["message"]
    neither = await client.post(url, json=body, headers=b.headers)
    assert neither.status_code == 422 and neither.json()["detail"]["field"] == "max_total_cents", neither.text
    assert await balance(client, b.key) == bal
    ok = await client.post(url, json={**body, "max_total_cents": price + 100}, headers=b.headers)
    assert ok.status_code == 201, ok.text
    assert ok.json()["charged_cents"] == price and await balance(client, b.key) == bal - price
    # the old name still works (exact price)
    old = {"addon_type": "udp", "idempotency_key": "g2", "expected_price_cents": 1}
    r = await client.post(url, json=old, headers=b.headers)
    assert r.status_code == 409 and r.json()["detail"]["expected_price_cents"] == 1, r.text


async def test_schema_marks_the_old_guard_deprecated(client: httpx.AsyncClient) -> None:
    spec = (await client.get(f"{API}/openapi.json")).json()
    body = spec["paths"][f"{API}/billing/services/{{service_id}}/addons"]["post"]["requestBody"]
    ref = body["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]
    schema = spec["components"]["schemas"][ref]
    assert schema["properties"]["expected_price_cents"]["deprecated"] is True
    assert "deprecated" not in schema["properties"]["max_total_cents"]
    assert "anyOf" not in schema  # generated clients (openapi-python-client) keep the model: one-of in words
    assert "one of" in schema["properties"]["max_total_cents"]["description"]


async def test_bearer_refusals_say_what_the_token_is(client: httpx.AsyncClient) -> None:
    url = f"{API}/customer/wallet/balance"
    messages = {}
    for token in ("ppk_bogus", "ppo_at_bogus", "ppo_rt_bogus", "bogus"):
        r = await client.get(url, headers=bearer(token))
        assert r.status_code == 401 and r.json()["detail"]["error"] == "unauthorized"
        messages[token] = r.json()["detail"]["message"]
    assert messages["ppk_bogus"] == "invalid or revoked API key"
    assert (
        "OAuth access token" in messages["ppo_at_bogus"] and "MCP endpoint only" in messages["ppo_at_bogus"]
    )
    assert "refresh token" in messages["ppo_rt_bogus"]
    assert messages["bogus"].startswith("unrecognized bearer token")
