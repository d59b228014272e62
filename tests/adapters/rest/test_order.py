"""POST /billing/composite/order: validation before any charge, quote == order price, wallet + checkout
remainder, idempotent retries (sequential and concurrent)."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import httpx
import pytest

from proxyplane.platform import Platform
from tests.domains.stock.support import fresh_stock
from tests.support import Account, bearer

pytestmark = pytest.mark.anyio
ORDER = "/api/v1/billing/composite/order"


def body(country: str = "IS", count: int = 8, **extra: Any) -> dict[str, Any]:
    return {
        "product_kind": "proxy_datacenter",
        "period_months": 1,
        "segments": [{"country": country, "count": count}],
        "geo_source": "maxmind",
        "whitelist_ips": ["127.0.0.9"],
        "use_balance": True,
        "idempotency_key": uuid.uuid4().hex,
        **extra,
    }


async def balance(client: httpx.AsyncClient, key: str) -> int:
    return (await client.get("/api/v1/customer/wallet/balance", headers=bearer(key))).json()["balance_cents"]


async def test_order_paid_from_wallet_equals_quote(
    client: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    await fresh_stock(platform, "proxy_datacenter", "IS", 20)
    key = await account.key()
    await account.credit(10_000)
    b = body(count=12, period_months=3)
    qb = {k: b[k] for k in ("product_kind", "period_months", "segments", "geo_source")}
    quote = (await client.post("/api/v1/billing/composite/quote", json=qb)).json()
    r = await client.post(ORDER, json=b, headers=bearer(key))
    assert r.status_code == 201, r.text
    out = r.json()
    assert out["total_cents"] == quote["total_cents"] == out["quote"]["total_cents"]
    assert out["amount_due_cents"] == 0 and out["checkout_url"] is None
    svc = out["service"]
    assert svc["status"] == "active" and svc["ip_count"] == 12 and len({i["ip"] for i in svc["ips"]}) == 12
    assert svc["whitelist_ips"] == ["127.0.0.9"] and "*" in svc["password"]
    assert svc["service_number"] == out["order_id"]
    assert await balance(client, key) == 10_000 - out["total_cents"]
    ledger = (await client.get("/api/v1/customer/wallet/ledger", headers=bearer(key))).json()["items"]
    assert ledger[0]["service_id"] == svc["service_id"] and ledger[0]["amount_cents"] == -out["total_cents"]
    got = await client.get(f"/api/v1/customer/services/{svc['service_id']}", headers=bearer(key))
    assert got.status_code == 200 and got.json()["status"] == "active"


@pytest.mark.parametrize(
    "change",
    [
        {"whitelist_ips": []},
        {"whitelist_ips": None},
        {"whitelist_ips": ["127.0.0.0/24"]},
        {"whitelist_ips": ["::1"]},
        {"whitelist_ips": ["not-an-ip"]},
        {"period_months": 2},
        {"geo_source": "ip2location"},
        {"product_kind": "proxy_mobile"},
        {"segments": [{"country": "XX", "count": 1}]},
        {"segments": [{"country": "IS", "count": 999}]},
        {"segments": []},
        {"segments": [{"country": "IS", "count": 0}]},
        {"idempotency_key": None},
        {"unknown_field": 1},
    ],
)
async def test_order_validation_422_charges_nothing(
    client: httpx.AsyncClient, platform: Platform, account: Account, change: dict[str, Any]
) -> None:
    await fresh_stock(platform, "proxy_datacenter", "IS", 10)
    key = await account.key()
    await account.credit(5_000)
    b = body()
    for k, v in change.items():
        if v is None:
            b.pop(k)
        else:
            b[k] = v
    r = await client.post(ORDER, json=b, headers=bearer(key))
    assert r.status_code == 422, r.text
    assert r.json()["detail"]["error"] in ("validation_error", "insufficient_stock")
    assert await balance(client, key) == 5_000
    services = (await client.get("/api/v1/customer/services", headers=bearer(key))).json()
    assert services["total"] == 0


async def test_order_scopes(client: httpx.AsyncClient, platform: Platform, account: Account) -> None:
    await fresh_stock(platform, "proxy_datacenter", "IS", 10)
    await account.credit(5_000)
    assert (await client.post(ORDER, json=body())).status_code == 401
    no_spend = await account.key({"services:write", "services:read", "wallet:read"})
    r = await client.post(ORDER, json=body(), headers=bearer(no_spend))
    assert r.status_code == 403 and r.json()["detail"]["error"] == "missing_scope"
    assert await balance(client, await account.key()) == 5_000


async def _pay(client: httpx.AsyncClient, platform: Platform, out: dict[str, Any], outcome: str) -> None:
    body_, headers = platform.processor().signed_callback(
        uuid.UUID(out["deposit_id"]), outcome, out["amount_due_cents"]
    )
    r = await client.post("/api/v1/payments/test/callback", content=body_, headers=headers)
    assert r.status_code == 200, r.text


async def test_remainder_through_checkout_then_active(
    client: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    await fresh_stock(platform, "proxy_datacenter", "IS", 40)
    key = await account.key()
    await account.credit(100)
    signals: list[uuid.UUID] = []
    platform.on("entitlements_changed", signals.append)
    r = await client.post(ORDER, json=body(count=30), headers=bearer(key))
    assert r.status_code == 201, r.text
    out = r.json()
    assert out["wallet_paid_cents"] == 100 and out["amount_due_cents"] == out["total_cents"] - 100 > 0
    assert out["service"]["status"] == "pending" and out["checkout_url"].startswith("http://testserver/")
    assert await balance(client, key) == 0
    await _pay(client, platform, out, "paid")
    svc = (
        await client.get(f"/api/v1/customer/services/{out['service']['service_id']}", headers=bearer(key))
    ).json()
    assert svc["status"] == "active" and svc["amount_due_cents"] == 0 and svc["expires_at"]
    assert await balance(client, key) == 0  # deposit credited then taken by the order
    ledger = (await client.get("/api/v1/customer/wallet/ledger", headers=bearer(key))).json()["items"]
    assert [e["kind"] for e in ledger[:3]] == ["purchase", "deposit", "purchase"]
    assert uuid.UUID(svc["service_id"]) in signals
    await _pay(client, platform, out, "paid")  # repeated callback: no second activation charge
    assert await balance(client, key) == 0


async def test_without_use_balance_everything_at_checkout_and_declined_refunds(
    client: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    await fresh_stock(platform, "proxy_datacenter", "IS", 7, capacity=1)
    key = await account.key()
    await account.credit(70)
    r = await client.post(ORDER, json=body(count=7, use_balance=False), headers=bearer(key))
    out = r.json()
    assert r.status_code == 201 and out["wallet_paid_cents"] == 0
    assert out["amount_due_cents"] == out["total_cents"]
    assert await balance(client, key) == 70
    # the pending order holds the IPs
    countries = (await client.get("/api/v1/billing/countries")).json()["countries"]
    assert "IS" not in [c["code"] for c in countries]
    await _pay(client, platform, out, "failed")
    svc = (
        await client.get(f"/api/v1/customer/services/{out['service']['service_id']}", headers=bearer(key))
    ).json()
    assert svc["status"] == "cancelled" and svc["ips"] == []
    countries = (await client.get("/api/v1/billing/countries")).json()["countries"]
    assert {"code": "IS", "available_ips": 7}.items() <= next(
        c for c in countries if c["code"] == "IS"
    ).items()


async def test_declined_checkout_refunds_wallet_part(
    client: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    await fresh_stock(platform, "proxy_datacenter", "IS", 20)
    key = await account.key()
    await account.credit(50)
    out = (await client.post(ORDER, json=body(count=20), headers=bearer(key))).json()
    assert out["wallet_paid_cents"] == 50 and await balance(client, key) == 0
    await _pay(client, platform, out, "failed")
    assert await balance(client, key) == 50


async def test_idempotent_retry_sequential(
    client: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    await fresh_stock(platform, "proxy_datacenter", "IS", 10)
    key = await account.key()
    await account.credit(5_000)
    b = body(count=8)
    first = await client.post(ORDER, json=b, headers=bearer(key))
    again = await client.post(ORDER, json=b, headers=bearer(key))
    assert first.status_code == 201 and again.status_code == 201
    assert first.json()["service"]["service_id"] == again.json()["service"]["service_id"]
    assert await balance(client, key) == 5_000 - first.json()["total_cents"]
    other = await client.post(ORDER, json=b | {"period_months": 3}, headers=bearer(key))
    assert other.status_code == 409
    assert (await client.get("/api/v1/customer/services", headers=bearer(key))).json()["total"] == 1


async def test_idempotent_retry_concurrent(
    client: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    await fresh_stock(platform, "proxy_datacenter", "IS", 10)
    key = await account.key()
    await account.credit(5_000)
    b = body(count=8)
    results = await asyncio.gather(*[client.post(ORDER, json=b, headers=bearer(key)) for _ in range(50)])
    assert all(r.status_code == 201 for r in results), {r.status_code for r in results}
    assert len({r.json()["service"]["service_id"] for r in results}) == 1
    assert await balance(client, key) == 5_000 - results[0].json()["total_cents"]
    assert (await client.get("/api/v1/customer/services", headers=bearer(key))).json()["total"] == 1
