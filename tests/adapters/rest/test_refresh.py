"""IP refresh: free once per interval, then paid at the pricing-info price (needs wallet:spend); whole
list or only target_ips; same countries; never an IP the service holds or held; idempotent; unknown
target IP -> 422."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from proxyplane.domains.pricing import DEFAULT_PRICEBOOKS, refresh_price_cents
from proxyplane.domains.stock.service import StockLine, add_ips
from proxyplane.platform import Platform
from tests.adapters.rest.growth_support import API, age, assigned, balance, buy, service
from tests.domains.stock.support import unique_loopback
from tests.support import bearer

pytestmark = pytest.mark.anyio
BOOK = DEFAULT_PRICEBOOKS["proxy_datacenter"]


async def test_free_then_paid_never_a_held_ip(client: httpx.AsyncClient, platform: Platform) -> None:
    b = await buy(client, platform, country="LU", count=8, stock=30)
    url = f"{API}/customer/services/{b.sid}/proxy"
    st = (await client.get(f"{url}/refresh-status", headers=b.headers)).json()
    assert st["next_refresh"] == "free" and st["free"] is True and st["full_refresh_price_cents"] == 0
    assert st["free_refresh_interval_days"] == BOOK.free_refresh_interval_days
    assert st["price_per_ip_cents"] == refresh_price_cents(BOOK, 1)
    first = [i["ip"] for i in b.service["ips"]]
    bal = await balance(client, b.key)

    r = await client.post(f"{url}/refresh", json={"idempotency_key": "r1"}, headers=b.headers)
    assert r.status_code == 200, r.text
    out = r.json()
    assert out["refresh"] == "free" and out["charged_cents"] == 0 and await balance(client, b.key) == bal
    second = [i["ip"] for i in out["ips"]]
    assert len(second) == 8 and not set(second) & set(first)
    assert {i["country"] for i in out["ips"]} == {"LU"}
    assert sorted(x["old"] for x in out["replaced"]) == sorted(first)
    counts = await assigned(platform, first + second)
    assert all(counts[a] == 0 for a in first) and all(counts[a] == 1 for a in second)
    # replay: same answer, no second refresh
    again = await client.post(f"{url}/refresh", json={"idempotency_key": "r1"}, headers=b.headers)
    assert again.json() == out

    st = (await client.get(f"{url}/refresh-status", headers=b.headers)).json()
    assert st["next_refresh"] == "paid" and st["full_refresh_price_cents"] == refresh_price_cents(BOOK, 8)
    assert st["next_free_refresh_at"] is not None

    # paid, only two targets; without wallet:spend -> 403, nothing changed
    targets = second[:2]
    no_spend = await b.account.key({"services:read", "services:write"})
    r = await client.post(
        f"{url}/refresh", json={"target_ips": targets, "idempotency_key": "r2"}, headers=bearer(no_spend)
    )
    assert r.status_code == 403 and r.json()["detail"]["missing_scopes"] == ["wallet:spend"]
    assert [i["ip"] for i in (await service(client, b))["ips"]] == second
    r = await client.post(
        f"{url}/refresh", json={"target_ips": ["127.1.2.3"], "idempotency_key": "r3"}, headers=b.headers
    )
    assert r.status_code == 422 and r.json()["detail"]["unknown_ips"] == ["127.1.2.3"]
    r = await client.post(
        f"{url}/refresh", json={"target_ips": targets, "idempotency_key": "r2"}, headers=b.headers
    )
    assert r.status_code == 200, r.text
    paid = r.json()
    price = refresh_price_cents(BOOK, 2)
    assert paid["refresh"] == "paid" and paid["charged_cents"] == price
    assert await balance(client, b.key) == bal - price
    third = [i["ip"] for i in paid["ips"]]
    assert set(second[2:]) <= set(third) and not set(third) & (set(first) | set(targets))
    inv = (await client.get(f"{API}/customer/invoices/{paid['invoice_id']}", headers=b.headers)).json()
    assert inv["kind"] == "refresh" and inv["total_cents"] == price


async def test_free_window_follows_the_interval_and_stock_runs_out(
    client: httpx.AsyncClient, platform: Platform
) -> None:
    # 8 held + 8 spare: one full refresh works, the next one has nothing new to give
    b = await buy(client, platform, country="EE", count=8, stock=16, months=3)
    url = f"{API}/customer/services/{b.sid}/proxy"
    r = await client.post(f"{url}/refresh", json={"idempotency_key": "a"}, headers=b.headers)
    assert r.json()["refresh"] == "free"
    await age(platform, b.sid, BOOK.free_refresh_interval_days)  # the next interval has started
    st = (await client.get(f"{url}/refresh-status", headers=b.headers)).json()
    assert st["next_refresh"] == "free"
    before, bal = await service(client, b), await balance(client, b.key)
    r = await client.post(f"{url}/refresh", json={"idempotency_key": "b"}, headers=b.headers)
    assert r.status_code == 422 and r.json()["detail"]["error"] == "insufficient_stock"
    assert await service(client, b) == before and await balance(client, b.key) == bal
    assert (await client.get(f"{url}/refresh-status", headers=b.headers)).json()["next_refresh"] == "free"
    # new stock arrives: the free refresh is still there
    async with platform.db.unit_of_work() as uow:
        await add_ips(
            uow.session, "proxy_datacenter", [StockLine(unique_loopback(), "EE", "EE") for _ in range(8)]
        )
        await uow.commit()
    r = await client.post(f"{url}/refresh", json={"idempotency_key": "c"}, headers=b.headers)
    assert r.status_code == 200 and r.json()["refresh"] == "free"


async def test_concurrent_refreshes_use_the_free_one_once(
    client: httpx.AsyncClient, platform: Platform
) -> None:
    b = await buy(client, platform, country="LV", count=8, stock=40)
    url = f"{API}/customer/services/{b.sid}/proxy/refresh"
    bal = await balance(client, b.key)
    rs = await asyncio.gather(
        *[client.post(url, json={"idempotency_key": f"k{i}"}, headers=b.headers) for i in range(3)]
    )
    ok = [r.json() for r in rs if r.status_code == 200]
    assert all(r.status_code in (200, 409) for r in rs), [r.text for r in rs]
    assert [o["refresh"] for o in ok].count("free") == 1
    paid = sum(o["charged_cents"] for o in ok)
    assert paid == refresh_price_cents(BOOK, 8) * (len(ok) - 1)
    assert await balance(client, b.key) == bal - paid
    ips = [i["ip"] for i in (await service(client, b))["ips"]]
    assert len(ips) == len(set(ips)) == 8
