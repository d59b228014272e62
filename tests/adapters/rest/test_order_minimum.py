"""An order below the order minimum is refused with its own code naming the minimum and the order's
amount (not insufficient_stock); the quote lists it the same way."""

from __future__ import annotations

import uuid

import httpx
import pytest

from proxyplane.platform import Platform
from tests.domains.stock.support import fresh_stock
from tests.support import Account, bearer

pytestmark = pytest.mark.anyio
PRICED = {"product_kind": "proxy_datacenter", "period_months": 1, "geo_source": "maxmind"}


async def test_order_below_the_minimum_is_refused_with_its_own_code(
    client: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    await fresh_stock(platform, "proxy_datacenter", "IS", 10)
    info = (await client.get("/api/v1/billing/composite/pricing-info")).json()
    minimum = info["products"]["proxy_datacenter"]["min_order_cents"]
    key = await account.key()
    await account.credit(5_000)
    segments = [{"country": "IS", "count": 2}]  # 2 x 15 cents a month, under the 100-cent minimum
    quote = (
        await client.post("/api/v1/billing/composite/quote", json=PRICED | {"segments": segments})
    ).json()
    (error,) = quote["errors"]
    assert error["error"] == "order_below_minimum" and error["country"] is None
    assert (
        error["minimum_monthly_cents"] == minimum and error["monthly_cents"] == quote["monthly_total_cents"]
    )
    assert str(minimum) in error["message"] and str(quote["monthly_total_cents"]) in error["message"]
    body = PRICED | {
        "segments": segments,
        "whitelist_ips": ["127.0.0.9"],
        "use_balance": True,
        "idempotency_key": uuid.uuid4().hex,
    }
    r = await client.post("/api/v1/billing/composite/order", json=body, headers=bearer(key))
    assert r.status_code == 422
    detail = r.json()["detail"]
    assert detail["error"] == "order_below_minimum"
    assert (
        detail["minimum_monthly_cents"] == minimum and detail["monthly_cents"] == quote["monthly_total_cents"]
    )
    assert detail["ip_count"] == 2 and detail["minimum_ips"] >= 1
    assert detail["message"] == error["message"]
    balance = await client.get("/api/v1/customer/wallet/balance", headers=bearer(key))
    assert balance.json()["balance_cents"] == 5_000
    # out of stock stays insufficient_stock, listed with its code
    big = [{"country": "IS", "count": 11}]
    quote = (await client.post("/api/v1/billing/composite/quote", json=PRICED | {"segments": big})).json()
    assert [e["error"] for e in quote["errors"]] == ["insufficient_stock"]
    r = await client.post(
        "/api/v1/billing/composite/order",
        json=body | {"segments": big, "idempotency_key": uuid.uuid4().hex},
        headers=bearer(key),
    )
    assert r.status_code == 422 and r.json()["detail"]["error"] == "insufficient_stock"
