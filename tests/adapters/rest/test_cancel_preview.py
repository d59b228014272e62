"""GET /customer/services/{id}/cancel/preview: the refund a cancel would give now (service + add-ons),
from the same functions the cancel uses; it changes nothing, and the cancel then refunds that amount."""

from __future__ import annotations

import uuid
from datetime import datetime

import httpx
import pytest

from proxyplane.domains.pricing import refund_unused
from proxyplane.platform import Platform
from tests.adapters.rest.growth_support import API, age, balance, buy, load
from tests.support import make_account

pytestmark = pytest.mark.anyio


async def test_preview_matches_cancel(client: httpx.AsyncClient, platform: Platform) -> None:
    b = await buy(client, platform, country="LV", count=8, stock=10, months=1)
    await age(platform, b.sid, 9)
    addons = f"{API}/billing/services/{b.sid}/addons"
    offer = (await client.get(f"{addons}/available", headers=b.headers)).json()["items"][0]
    bought = await client.post(
        addons,
        json={
            "addon_type": offer["addon_type"],
            "expected_price_cents": offer["price_cents"],
            "idempotency_key": "p1",
        },
        headers=b.headers,
    )
    assert bought.status_code == 201, bought.text
    addon = bought.json()["addon"]
    svc = await load(platform, b.sid)
    assert svc.current_period_start and svc.current_period_end
    before = await balance(client, b.key)

    url = f"{API}/customer/services/{b.sid}/cancel/preview"
    r = await client.get(url, headers=b.headers)
    assert r.status_code == 200, r.text
    p = r.json()
    at = datetime.fromisoformat(p["as_of"])
    service_part = refund_unused(svc.period_price_cents, svc.current_period_start, svc.current_period_end, at)
    addon_part = refund_unused(
        addon["purchase_price_cents"],
        datetime.fromisoformat(addon["activated_at"]),
        svc.current_period_end,
        at,
    )
    assert p["cancellable"] is True
    assert p["service_refund_cents"] == service_part > 0
    assert p["addons_refund_cents"] == addon_part > 0
    assert p["refund_cents"] == service_part + addon_part
    assert await balance(client, b.key) == before  # a preview changes nothing
    still = await client.get(f"{API}/customer/services/{b.sid}", headers=b.headers)
    assert still.json()["status"] == "active"

    cancel = await client.post(f"{API}/customer/services/{b.sid}/cancel", headers=b.headers)
    assert cancel.status_code == 200, cancel.text
    refunded = cancel.json()["refunded_cents"]
    # same functions, a few milliseconds later: equal, or less by the time that passed (at most a cent)
    assert 0 <= p["refund_cents"] - refunded <= 1
    assert await balance(client, b.key) == before + refunded
    after = (await client.get(url, headers=b.headers)).json()
    assert after["cancellable"] is False and after["refund_cents"] == 0


async def test_preview_needs_own_service_and_read_scope(
    client: httpx.AsyncClient, platform: Platform
) -> None:
    b = await buy(client, platform, country="LT", count=8, stock=9)
    url = f"{API}/customer/services/{b.sid}/cancel/preview"
    other = await make_account(platform)
    r = await client.get(url, headers={"Authorization": f"Bearer {await other.key()}"})
    assert r.status_code == 404
    no_scope = await b.account.key({"wallet:read"})
    r = await client.get(url, headers={"Authorization": f"Bearer {no_scope}"})
    assert r.status_code == 403
    r = await client.get(f"{API}/customer/services/{uuid.uuid4()}/cancel/preview", headers=b.headers)
    assert r.status_code == 404
