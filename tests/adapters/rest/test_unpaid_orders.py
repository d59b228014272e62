"""GET /customer/orders/unpaid (issue 22.1): a partly paid order is listed with its amount due, checkout
link and when it lapses until its checkout is paid; another customer never sees it."""

from __future__ import annotations

from datetime import datetime, timedelta

import httpx
import pytest

from proxyplane.platform import Platform
from tests.adapters.rest.test_order import ORDER, _pay, body
from tests.domains.stock.support import fresh_stock
from tests.support import Account, bearer, make_account

pytestmark = pytest.mark.anyio
UNPAID = "/api/v1/customer/orders/unpaid"


async def test_partly_paid_order_listed_until_paid(
    client: httpx.AsyncClient, platform: Platform, account: Account, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PROXYPLANE_CHECKOUT_TTL_MINUTES", "90")
    await fresh_stock(platform, "proxy_datacenter", "IS", 40)
    key = await account.key()
    await account.credit(100)
    out = (await client.post(ORDER, json=body(count=30), headers=bearer(key))).json()
    items = (await client.get(UNPAID, headers=bearer(key))).json()["items"]
    assert len(items) == 1, (out, items)
    order = items[0]
    assert order["service_id"] == out["service"]["service_id"]
    assert order["amount_due_cents"] == out["amount_due_cents"] == out["total_cents"] - 100
    assert order["wallet_paid_cents"] == 100 and order["ip_count"] == 30
    assert order["checkout_url"] == out["checkout_url"] and order["deposit_id"] == out["deposit_id"]
    assert order["product_name"] == "Datacenter proxies"
    opened, lapses = datetime.fromisoformat(order["opened_at"]), datetime.fromisoformat(order["cancel_after"])
    assert lapses - opened == timedelta(minutes=90)

    stranger = await make_account(platform)
    assert (await client.get(UNPAID, headers=bearer(await stranger.key()))).json()["items"] == []
    await _pay(client, platform, out, "paid")
    assert (await client.get(UNPAID, headers=bearer(key))).json()["items"] == []
