"""Add IPs to a service: the quote charges and changes nothing; the purchase charges exactly the quote,
allocates atomically (never oversold, never an IP the service holds), raises the renewal price, is
idempotent (sequential and concurrent), and a 402 leaves everything unchanged."""

from __future__ import annotations

import asyncio
import uuid

import httpx
import pytest

from proxyplane.core.clock import utcnow
from proxyplane.domains.pricing import DEFAULT_PRICEBOOKS, quote_add_ips
from proxyplane.domains.services.service import renewal_charge_cents
from proxyplane.platform import Platform
from tests.adapters.rest.growth_support import API, age, assigned, balance, buy, load, service
from tests.domains.stock.support import fresh_stock

pytestmark = pytest.mark.anyio
BOOK = DEFAULT_PRICEBOOKS["proxy_datacenter"]


async def test_quote_is_free_and_purchase_charges_exactly_it(
    client: httpx.AsyncClient, platform: Platform
) -> None:
    b = await buy(client, platform, country="LU", count=8, stock=20, months=3)
    await fresh_stock(platform, "proxy_datacenter", "EE", 5, capacity=1)
    await age(platform, b.sid, 10)
    svc = await load(platform, b.sid)
    before, bal = await service(client, b), await balance(client, b.key)
    added = [{"country": "LU", "count": 3}, {"country": "EE", "count": 2}]
    r = await client.post(
        f"{API}/billing/services/{b.sid}/add-ips/quote", json={"segments": added}, headers=b.headers
    )
    assert r.status_code == 200, r.text
    q = r.json()
    assert svc.current_period_start and svc.current_period_end
    expected = quote_add_ips(
        BOOK,
        [("LU", 8)],
        [("LU", 3), ("EE", 2)],
        3,
        svc.current_period_start,
        svc.current_period_end,
        utcnow(),
    )
    assert q["charge_cents"] == expected.charge_cents > 0 and q["binding"] is False and q["errors"] == []
    assert q["new_renewal_monthly_cents"] == expected.renewal.monthly_cents
    assert q["new_renewal_price_cents"] == renewal_charge_cents(expected.renewal.monthly_cents, 3, 5)
    assert (
        q["new_renewal_monthly_cents"] > before["renewal_price_cents"] == q["current_renewal_monthly_cents"]
    )
    assert await balance(client, b.key) == bal and await service(client, b) == before

    body = {"segments": added, "idempotency_key": "grow-1"}
    r = await client.post(f"{API}/billing/services/{b.sid}/add-ips", json=body, headers=b.headers)
    assert r.status_code == 200, r.text
    out = r.json()
    assert out["charged_cents"] == q["charge_cents"] and out["ip_count"] == 13
    assert await balance(client, b.key) == bal - q["charge_cents"]
    after = await service(client, b)
    assert after["renewal_price_cents"] == q["new_renewal_monthly_cents"]
    assert {s["country"]: s["count"] for s in after["segments"]} == {"LU": 11, "EE": 2}
    old_ips = {i["ip"] for i in before["ips"]}
    new_ips = {i["ip"] for i in out["new_ips"]}
    assert len(new_ips) == 5 and not new_ips & old_ips
    assert sorted(i["country"] for i in out["new_ips"]) == ["EE", "EE", "LU", "LU", "LU"]
    assert after["max_connections"] == before["max_connections"] + 5 * BOOK.included_connections_per_ip
    # the invoice carries exactly the charge
    inv = (await client.get(f"{API}/customer/invoices/{out['invoice_id']}", headers=b.headers)).json()
    assert inv["kind"] == "add_ips" and inv["total_cents"] == q["charge_cents"]
    assert sum(line["amount_cents"] for line in inv["lines"]) == q["charge_cents"]

    # sequential replay: same response, no second charge, no more IPs
    again = await client.post(f"{API}/billing/services/{b.sid}/add-ips", json=body, headers=b.headers)
    assert again.status_code == 200 and again.json() == out
    assert await balance(client, b.key) == bal - q["charge_cents"]
    assert (await service(client, b))["ip_count"] == 13


async def test_concurrent_same_key_charges_once(client: httpx.AsyncClient, platform: Platform) -> None:
    b = await buy(client, platform, country="LV", count=8, stock=14)
    bal = await balance(client, b.key)
    body = {"segments": [{"country": "LV", "count": 2}], "idempotency_key": uuid.uuid4().hex}
    rs = await asyncio.gather(
        *[
            client.post(f"{API}/billing/services/{b.sid}/add-ips", json=body, headers=b.headers)
            for _ in range(4)
        ]
    )
    assert {r.status_code for r in rs} == {200}, [r.text for r in rs]
    assert len({r.text for r in rs}) == 1
    charge = rs[0].json()["charged_cents"]
    assert await balance(client, b.key) == bal - charge
    assert (await service(client, b))["ip_count"] == 10


async def test_never_oversold_and_402_changes_nothing(client: httpx.AsyncClient, platform: Platform) -> None:
    # 11 single-capacity IPs: the service holds 8, so only 3 can be added, whatever the concurrency
    b = await buy(client, platform, country="LT", count=8, stock=11)
    stock_ips = [i["ip"] for i in b.service["ips"]]
    url = f"{API}/billing/services/{b.sid}/add-ips"
    q = await client.post(
        f"{url}/quote", json={"segments": [{"country": "LT", "count": 4}]}, headers=b.headers
    )
    assert q.json()["errors"][0]["available"] == 3
    rs = await asyncio.gather(
        *[
            client.post(
                url,
                json={"segments": [{"country": "LT", "count": 2}], "idempotency_key": uuid.uuid4().hex},
                headers=b.headers,
            )
            for _ in range(3)
        ]
    )
    codes = sorted(r.status_code for r in rs)
    assert codes == [200, 422, 422], [r.text for r in rs]
    svc = await service(client, b)
    assert svc["ip_count"] == 10
    counts = await assigned(platform, [i["ip"] for i in svc["ips"]] + stock_ips)
    assert set(counts.values()) == {1}

    # a poor customer: 402, nothing allocated, balance and service unchanged
    poor = await buy(client, platform, country="SK", count=8, stock=8, credit=140)
    await fresh_stock(platform, "proxy_datacenter", "BG", 3, capacity=1)
    before, bal = await service(client, poor), await balance(client, poor.key)
    r = await client.post(
        f"{API}/billing/services/{poor.sid}/add-ips",
        json={"segments": [{"country": "BG", "count": 3}], "idempotency_key": "x"},
        headers=poor.headers,
    )
    assert r.status_code == 402 and r.json()["detail"]["error"] == "insufficient_balance"
    assert await service(client, poor) == before and await balance(client, poor.key) == bal
    countries = (await client.get(f"{API}/billing/countries")).json()["countries"]
    assert next(c for c in countries if c["code"] == "BG")["available_ips"] == 3


async def test_scopes_and_other_customers(client: httpx.AsyncClient, platform: Platform) -> None:
    b = await buy(client, platform, country="LU", count=8, stock=9)
    other = await buy(client, platform, country="EE", count=8, stock=8)
    body = {"segments": [{"country": "LU", "count": 1}], "idempotency_key": "k"}
    r = await client.post(f"{API}/billing/services/{b.sid}/add-ips", json=body, headers=other.headers)
    assert r.status_code == 404
    no_spend = await b.account.key({"services:read", "services:write"})
    r = await client.post(
        f"{API}/billing/services/{b.sid}/add-ips", json=body, headers={"Authorization": f"Bearer {no_spend}"}
    )
    assert r.status_code == 403 and r.json()["detail"]["missing_scopes"] == ["wallet:spend"]
    r = await client.post(
        f"{API}/billing/services/{b.sid}/add-ips/quote",
        json={"segments": [{"country": "LU", "count": 0}]},
        headers=b.headers,
    )
    assert r.status_code == 422


async def test_quote_counts_only_ips_the_service_does_not_hold(
    client: httpx.AsyncClient, platform: Platform
) -> None:
    # shared IPs (2 slots): the service's own 8 still have a free slot, but not for it
    b = await buy(client, platform, country="EE", count=8, stock=10, capacity=2)
    q = await client.post(
        f"{API}/billing/services/{b.sid}/add-ips/quote",
        json={"segments": [{"country": "EE", "count": 4}]},
        headers=b.headers,
    )
    assert q.status_code == 200, q.text
    assert q.json()["errors"][0]["available"] == 2, q.text
    countries = (await client.get(f"{API}/billing/countries")).json()["countries"]
    assert next(c for c in countries if c["code"] == "EE")["available_ips"] == 10  # for anyone else
