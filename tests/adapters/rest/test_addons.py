"""Add-ons: available list with prices and balance; purchase with expected price (409 on a different
price, 402 on a short balance, nothing changed either way), idempotent; active list fields; DELETE
refunds the unused time pro rata and is idempotent; the gateway entitlements follow."""

from __future__ import annotations

import asyncio
import uuid
from datetime import datetime

import httpx
import pytest

from proxyplane.core.clock import utcnow
from proxyplane.domains.addons.service import entitlements
from proxyplane.domains.pricing import DEFAULT_PRICEBOOKS, addon_charge_cents, refund_unused
from proxyplane.platform import Platform
from tests.adapters.rest.growth_support import API, age, balance, buy, load

pytestmark = pytest.mark.anyio
BOOK = DEFAULT_PRICEBOOKS["proxy_datacenter"]


async def gateway_view(platform: Platform, sid: str) -> tuple[bool, int, int]:
    async with platform.db.unit_of_work(write=False) as uow:
        return tuple(await entitlements(uow.session, uuid.UUID(sid)))  # type: ignore[return-value]


async def test_available_buy_list_cancel(client: httpx.AsyncClient, platform: Platform) -> None:
    b = await buy(client, platform, country="LU", count=8, stock=10, months=3)
    await age(platform, b.sid, 20)
    svc = await load(platform, b.sid)
    assert svc.current_period_start and svc.current_period_end
    signals: list[object] = []
    platform.on("entitlements_changed", signals.append)
    base = await gateway_view(platform, b.sid)
    assert base == (False, BOOK.included_whitelist_slots, 8 * BOOK.included_connections_per_ip)

    r = await client.get(f"{API}/billing/services/{b.sid}/addons/available", headers=b.headers)
    assert r.status_code == 200, r.text
    avail = r.json()
    assert avail["balance_cents"] == await balance(client, b.key)
    offers = {o["addon_type"]: o for o in avail["items"]}
    assert set(offers) == {"udp", "extra_whitelist_slots", "extra_connections"}
    for kind, offer in offers.items():
        expected = addon_charge_cents(
            BOOK,
            kind,
            ip_count=8,
            period_months=3,
            period_start=svc.current_period_start,
            period_end=svc.current_period_end,
            at=utcnow(),
        )
        assert offer["price_cents"] == expected > 0, kind

    url = f"{API}/billing/services/{b.sid}/addons"
    price = offers["extra_connections"]["price_cents"]
    bal = await balance(client, b.key)
    # a different price: 409, nothing charged
    r = await client.post(
        url,
        json={"addon_type": "extra_connections", "expected_price_cents": price - 1, "idempotency_key": "a1"},
        headers=b.headers,
    )
    assert r.status_code == 409 and r.json()["detail"]["error"] == "price_changed"
    assert r.json()["detail"]["current_price_cents"] == price
    assert await balance(client, b.key) == bal
    assert (await client.get(url, headers=b.headers)).json()["items"] == []

    body = {"addon_type": "extra_connections", "expected_price_cents": price, "idempotency_key": "a1"}
    r = await client.post(url, json=body, headers=b.headers)
    assert r.status_code == 201, r.text
    bought = r.json()
    assert bought["charged_cents"] == price and bought["balance_cents"] == bal - price
    addon = bought["addon"]
    assert addon["status"] == "active" and addon["addon_type"] == "extra_connections"
    assert addon["purchase_price_cents"] == price and addon["parameters"] == {"connections": 100}
    assert addon["activated_at"] and addon["invoice_id"]
    # replay: same add-on, charged once
    again = await client.post(url, json=body, headers=b.headers)
    assert again.status_code == 201 and again.json() == bought
    assert await balance(client, b.key) == bal - price
    assert await gateway_view(platform, b.sid) == (base[0], base[1], base[2] + 100)
    assert uuid.UUID(b.sid) in signals

    active = (await client.get(url, headers=b.headers)).json()["items"]
    assert [a["addon_id"] for a in active] == [addon["addon_id"]]
    avail = (await client.get(f"{url}/available", headers=b.headers)).json()
    assert {o["addon_type"] for o in avail["items"]} == {"udp", "extra_whitelist_slots"}
    # buying the same kind again while active: 409, nothing charged
    r = await client.post(
        url,
        json={"addon_type": "extra_connections", "expected_price_cents": price, "idempotency_key": "a2"},
        headers=b.headers,
    )
    assert r.status_code == 409 and await balance(client, b.key) == bal - price

    # DELETE refunds the unused time pro rata (pricing.refund_unused), twice is fine
    signals.clear()
    r = await client.delete(f"{url}/{addon['addon_id']}", headers=b.headers)
    assert r.status_code == 200, r.text
    out = r.json()
    refund = out["refunded_cents"]
    activated = datetime.fromisoformat(addon["activated_at"])
    assert refund == refund_unused(price, activated, svc.current_period_end, utcnow()) > 0
    assert out["addon"]["status"] == "canceled"
    assert await balance(client, b.key) == bal - price + refund
    r2 = await client.delete(f"{url}/{addon['addon_id']}", headers=b.headers)
    assert r2.status_code == 200 and r2.json()["refunded_cents"] == refund
    assert await balance(client, b.key) == bal - price + refund
    assert (await client.get(url, headers=b.headers)).json()["items"] == []
    assert await gateway_view(platform, b.sid) == base and uuid.UUID(b.sid) in signals
    inv = (await client.get(f"{API}/customer/invoices/{addon['invoice_id']}", headers=b.headers)).json()
    assert inv["kind"] == "addon" and inv["refunded_cents"] == refund
    assert (await client.delete(f"{url}/{uuid.uuid4()}", headers=b.headers)).status_code == 404


async def test_refund_is_pro_rata_of_unused_days(client: httpx.AsyncClient, platform: Platform) -> None:
    b = await buy(client, platform, country="EE", count=8, stock=8)
    url = f"{API}/billing/services/{b.sid}/addons"
    offers = (await client.get(f"{url}/available", headers=b.headers)).json()["items"]
    udp = next(o for o in offers if o["addon_type"] == "udp")
    r = await client.post(
        url,
        json={"addon_type": "udp", "expected_price_cents": udp["price_cents"], "idempotency_key": "u"},
        headers=b.headers,
    )
    assert r.status_code == 201, r.text
    assert (await gateway_view(platform, b.sid))[0] is True
    addon_id = r.json()["addon"]["addon_id"]
    # 10 days later
    from sqlalchemy import update

    from proxyplane.storage.models.billing import ServiceAddon

    async with platform.db.unit_of_work() as uow:
        row = await uow.session.get(ServiceAddon, uuid.UUID(addon_id))
        assert row is not None
        start, end, paid = row.period_start, row.period_end, row.paid_cents
        await uow.session.execute(
            update(ServiceAddon)
            .where(ServiceAddon.addon_id == row.addon_id)
            .values(period_start=start - (end - start) / 3, period_end=end - (end - start) / 3)
        )
        await uow.commit()
    async with platform.db.unit_of_work(write=False) as uow:
        row = await uow.session.get(ServiceAddon, uuid.UUID(addon_id))
        assert row is not None
        new_start, new_end = row.period_start, row.period_end
    bal = await balance(client, b.key)
    r = await client.delete(f"{url}/{addon_id}", headers=b.headers)
    expected = refund_unused(paid, new_start, new_end, utcnow())
    assert r.json()["refunded_cents"] == expected and 0 < expected < paid
    assert await balance(client, b.key) == bal + expected
    assert (await gateway_view(platform, b.sid))[0] is False


async def test_402_and_concurrency(client: httpx.AsyncClient, platform: Platform) -> None:
    # 8 IPs x 15 = 120 for the order; 5 cents left
    b = await buy(client, platform, country="LV", count=8, stock=8, credit=125)
    url = f"{API}/billing/services/{b.sid}/addons"
    offers = {
        o["addon_type"]: o for o in (await client.get(f"{url}/available", headers=b.headers)).json()["items"]
    }
    price = offers["extra_whitelist_slots"]["price_cents"]
    assert price > 5
    r = await client.post(
        url,
        json={"addon_type": "extra_whitelist_slots", "expected_price_cents": price, "idempotency_key": "p"},
        headers=b.headers,
    )
    assert r.status_code == 402 and r.json()["detail"]["error"] == "insufficient_balance"
    assert await balance(client, b.key) == 5
    assert (await client.get(url, headers=b.headers)).json()["items"] == []
    # enough money; four concurrent purchases with the same key and two with other keys: one add-on
    await b.account.credit(10_000)
    body = {"addon_type": "extra_whitelist_slots", "quantity": 2, "idempotency_key": "same"}
    # the price of quantity 2 (prorated once, so not always exactly 2x): the 409 states it
    probe = await client.post(url, json={**body, "expected_price_cents": 0}, headers=b.headers)
    assert probe.status_code == 409
    price2 = probe.json()["detail"]["current_price_cents"]
    assert abs(price2 - 2 * price) <= 1
    body["expected_price_cents"] = price2
    calls = [client.post(url, json=body, headers=b.headers) for _ in range(4)]
    calls += [
        client.post(url, json={**body, "idempotency_key": f"other-{i}"}, headers=b.headers) for i in range(2)
    ]
    rs = await asyncio.gather(*calls)
    ok = [r for r in rs if r.status_code == 201]
    assert {r.json()["addon"]["addon_id"] for r in ok} and len(
        {r.json()["addon"]["addon_id"] for r in ok}
    ) == 1
    assert all(r.status_code in (201, 409) for r in rs), [r.text for r in rs]
    assert await balance(client, b.key) == 10_005 - price2
    active = (await client.get(url, headers=b.headers)).json()["items"]
    assert len(active) == 1 and active[0]["parameters"] == {"whitelist_slots": 2}
    assert (await gateway_view(platform, b.sid))[1] == BOOK.included_whitelist_slots + 2
    # scopes: the available list needs services:write + wallet:spend; DELETE of an unknown add-on is 404
    read_only = await b.account.key({"services:read"})
    r = await client.get(f"{url}/available", headers={"Authorization": f"Bearer {read_only}"})
    assert r.status_code == 403
    assert (await client.get(url, headers={"Authorization": f"Bearer {read_only}"})).status_code == 200
    assert (await client.delete(f"{url}/{uuid.uuid4()}", headers=b.headers)).status_code == 404
