"""The v1 whitelist limit has one source: addons.entitlements().whitelist_limit (included slots of the
price book + active extra_whitelist_slots add-ons). Buying slots raises it by exactly their number
(409 when full); cancelling the add-on lowers it again and removes the newest entries beyond it."""

from __future__ import annotations

import uuid

import httpx
import pytest

from proxyplane.domains.addons.service import entitlements
from proxyplane.domains.pricing import DEFAULT_PRICEBOOKS
from proxyplane.platform import Platform
from tests.adapters.rest.growth_support import API, Bought, buy

pytestmark = pytest.mark.anyio
INCLUDED = DEFAULT_PRICEBOOKS["proxy_datacenter"].included_whitelist_slots


async def whitelist(client: httpx.AsyncClient, b: Bought) -> dict:
    r = await client.get(f"{API}/customer/services/{b.sid}/proxy/whitelist", headers=b.headers)
    assert r.status_code == 200, r.text
    return dict(r.json())


async def add(client: httpx.AsyncClient, b: Bought, ip: str) -> httpx.Response:
    return await client.post(
        f"{API}/customer/services/{b.sid}/proxy/whitelist", json={"ip": ip}, headers=b.headers
    )


async def gateway_limit(platform: Platform, b: Bought) -> int:
    async with platform.db.unit_of_work(write=False) as uow:
        return (await entitlements(uow.session, uuid.UUID(b.sid))).whitelist_limit


async def test_slots_add_on_raises_and_lowers_the_limit(
    client: httpx.AsyncClient, platform: Platform
) -> None:
    b = await buy(client, platform, country="DK", count=8, stock=8)  # whitelist: 127.0.0.9
    assert (await whitelist(client, b))["limit"] == INCLUDED == await gateway_limit(platform, b)
    for n in range(2, INCLUDED + 1):
        assert (await add(client, b, f"127.0.0.{n + 10}")).status_code == 200
    full = await add(client, b, "127.0.0.99")
    assert full.status_code == 409, full.text

    offers = (await client.get(f"{API}/billing/services/{b.sid}/addons/available", headers=b.headers)).json()
    offer = next(o for o in offers["items"] if o["addon_type"] == "extra_whitelist_slots")
    quote = await client.post(
        f"{API}/billing/services/{b.sid}/addons",
        json={
            "addon_type": "extra_whitelist_slots",
            "quantity": 2,
            "expected_price_cents": 0,
            "idempotency_key": "q",
        },
        headers=b.headers,
    )
    assert quote.status_code == 409  # the 409 body carries the price for 2 slots
    r = await client.post(
        f"{API}/billing/services/{b.sid}/addons",
        json={
            "addon_type": "extra_whitelist_slots",
            "quantity": 2,
            "expected_price_cents": quote.json()["detail"]["current_price_cents"],
            "idempotency_key": "s",
        },
        headers=b.headers,
    )
    assert r.status_code == 201, r.text
    assert offer["unit_size"] == 1
    assert (await whitelist(client, b))["limit"] == INCLUDED + 2 == await gateway_limit(platform, b)
    assert (await add(client, b, "127.0.0.99")).status_code == 200
    assert (await add(client, b, "127.0.0.98")).status_code == 200
    assert (await add(client, b, "127.0.0.97")).status_code == 409
    before = (await whitelist(client, b))["ips"]
    assert len(before) == INCLUDED + 2

    d = await client.delete(
        f"{API}/billing/services/{b.sid}/addons/{r.json()['addon']['addon_id']}", headers=b.headers
    )
    assert d.status_code == 200, d.text
    after = await whitelist(client, b)
    assert after["limit"] == INCLUDED == await gateway_limit(platform, b)
    assert after["ips"] == before[:INCLUDED]  # the newest entries beyond the limit are removed
    assert (await add(client, b, "127.0.0.97")).status_code == 409
