"""The renewal job with an injected clock: renews due auto-renewing services once (also with two
workers at once), suspends on a short balance after the term, resumes (job or operation), terminates after
the grace period with the IPs back in stock, expires services without auto-renew."""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta

import httpx
import pytest

from proxyplane.domains.pricing import DEFAULT_PRICEBOOKS
from proxyplane.domains.renewals.service import RenewalPolicy
from proxyplane.domains.services.service import add_months, renewal_charge_cents
from proxyplane.jobs.renewal_pass import run_pass
from proxyplane.jobs.renewals import run_once
from proxyplane.platform import Platform
from tests.adapters.rest.growth_support import API, Bought, age, assigned, balance, buy, load, service
from tests.support import bearer

pytestmark = pytest.mark.anyio
POLICY = RenewalPolicy(renew_before=timedelta(days=1), grace=timedelta(days=3))
BOOK = DEFAULT_PRICEBOOKS["proxy_datacenter"]


async def auto_renew(client: httpx.AsyncClient, b: Bought, on: bool = True) -> dict:
    r = await client.put(
        f"{API}/customer/services/{b.sid}/auto-renew", json={"auto_renew": on}, headers=b.headers
    )
    assert r.status_code == 200, r.text
    return dict(r.json())


async def test_renews_once_even_with_two_workers(client: httpx.AsyncClient, platform: Platform) -> None:
    b = await buy(client, platform, country="LU", count=8, stock=8, months=3)
    # an add-on renews with the service
    offers = (await client.get(f"{API}/billing/services/{b.sid}/addons/available", headers=b.headers)).json()
    udp = next(o for o in offers["items"] if o["addon_type"] == "udp")
    r = await client.post(
        f"{API}/billing/services/{b.sid}/addons",
        json={"addon_type": "udp", "expected_price_cents": udp["price_cents"], "idempotency_key": "u"},
        headers=b.headers,
    )
    assert r.status_code == 201
    toggled = await auto_renew(client, b)
    svc = await load(platform, b.sid)
    assert svc.current_period_end is not None
    expected = renewal_charge_cents(svc.renewal_price_cents, 3, 5) + udp["monthly_price_cents"] * 3
    assert toggled["auto_renew"] is True and toggled["renewal_price_cents"] == expected
    bal = await balance(client, b.key)

    # two days before the end: not due yet
    early = svc.current_period_end - timedelta(days=2)
    assert uuid.UUID(b.sid) not in (await run_pass(platform.db, early, POLICY)).renewed
    # 12 hours before the end: two workers at once renew it once
    now = svc.current_period_end - timedelta(hours=12)
    reports = await asyncio.gather(*[run_pass(platform.db, now, POLICY) for _ in range(2)])
    assert sum(uuid.UUID(b.sid) in r.renewed for r in reports) == 1
    assert await balance(client, b.key) == bal - expected
    after = await load(platform, b.sid)
    assert after.current_period_end == add_months(svc.current_period_end, 3) and after.status == "active"
    # a third pass in the same moment: nothing more
    assert uuid.UUID(b.sid) not in (await run_pass(platform.db, now, POLICY)).renewed
    assert await balance(client, b.key) == bal - expected
    invoices = (await client.get(f"{API}/customer/invoices", headers=b.headers)).json()["items"]
    assert invoices[0]["kind"] == "renewal" and invoices[0]["total_cents"] == expected
    addons = (await client.get(f"{API}/billing/services/{b.sid}/addons", headers=b.headers)).json()["items"]
    assert addons[0]["paid_through"].startswith(after.current_period_end.strftime("%Y-%m-%dT%H:%M:%S"))


async def test_short_balance_suspends_resume_and_terminate(
    client: httpx.AsyncClient, platform: Platform
) -> None:
    # 8 IPs x 15 = 120 for the order; 10 cents stay in the wallet
    b = await buy(client, platform, country="EE", count=8, stock=8, credit=130)
    await auto_renew(client, b)
    svc = await load(platform, b.sid)
    end = svc.current_period_end
    assert end is not None
    signals: list[object] = []
    platform.on("entitlements_changed", signals.append)

    report = await run_once(platform, end - timedelta(hours=1), POLICY)
    assert uuid.UUID(b.sid) in report.short and (await service(client, b))["status"] == "active"
    report = await run_once(platform, end + timedelta(minutes=1), POLICY)
    assert uuid.UUID(b.sid) in report.suspended and uuid.UUID(b.sid) in signals
    assert (await service(client, b))["status"] == "suspended" and await balance(client, b.key) == 10
    assert (await service(client, b))["ip_count"] == 8  # IPs kept during the grace period

    # resume by operation (real clock: move the lapsed term into the past first): 402 while short
    # (nothing changes), then it pays one term from now
    await age(platform, b.sid, 32)
    url = f"{API}/customer/services/{b.sid}/resume"
    r = await client.post(url, json={"idempotency_key": "r1"}, headers=b.headers)
    assert r.status_code == 402 and (await service(client, b))["status"] == "suspended"
    await b.account.credit(1000)
    r = await client.post(url, json={"idempotency_key": "r1"}, headers=b.headers)
    assert r.status_code == 200, r.text
    price = renewal_charge_cents(svc.renewal_price_cents, 1, 0)
    assert r.json()["charged_cents"] == price and r.json()["service"]["status"] == "active"
    assert await balance(client, b.key) == 1010 - price
    again = await client.post(url, json={"idempotency_key": "r1"}, headers=b.headers)
    assert again.json() == r.json() and await balance(client, b.key) == 1010 - price
    r = await client.post(url, json={"idempotency_key": "r2"}, headers=b.headers)
    assert r.status_code == 409  # active: nothing to resume

    # the new term runs out with an empty wallet: suspended, then terminated after the grace period
    svc = await load(platform, b.sid)
    assert svc.current_period_end is not None
    end = svc.current_period_end
    ips = [i["ip"] for i in (await service(client, b))["ips"]]
    async with platform.db.unit_of_work() as uow:
        from proxyplane.domains.wallet.service import debit

        await debit(uow.session, b.account.customer_id, 1010 - price, "adjustment", "test: empty the wallet")
        await uow.commit()
    await run_pass(platform.db, end + timedelta(minutes=1), POLICY)
    assert (await service(client, b))["status"] == "suspended"
    report = await run_pass(platform.db, end + POLICY.grace + timedelta(minutes=1), POLICY)
    assert uuid.UUID(b.sid) in report.terminated
    after = await service(client, b)
    assert after["status"] == "expired" and after["ips"] == []
    assert set((await assigned(platform, ips)).values()) == {0}


async def test_job_resumes_in_grace_and_expires_without_auto_renew(
    client: httpx.AsyncClient, platform: Platform
) -> None:
    b = await buy(client, platform, country="LV", count=8, stock=16, credit=130)
    plain = await buy(client, platform, country="LV", count=8, stock=None)
    await auto_renew(client, b)
    svc = await load(platform, b.sid)
    assert svc.current_period_end is not None
    end = svc.current_period_end
    plain_end = (await load(platform, plain.sid)).current_period_end
    assert plain_end is not None and plain_end < end + timedelta(minutes=1)
    report = await run_pass(platform.db, end + timedelta(minutes=1), POLICY)
    assert (await service(client, b))["status"] == "suspended"
    # without auto-renew: expired at the term end, IPs back in stock
    assert uuid.UUID(plain.sid) in report.expired
    plain_after = await service(client, plain)
    assert plain_after["status"] == "expired" and plain_after["ips"] == []
    await b.account.credit(500)
    report = await run_pass(platform.db, end + timedelta(days=1), POLICY)
    assert uuid.UUID(b.sid) in report.resumed and (await service(client, b))["status"] == "active"
    resumed = await load(platform, b.sid)
    assert resumed.current_period_end == add_months(end + timedelta(days=1), 1)


async def test_toggle_needs_wallet_spend_to_turn_on(client: httpx.AsyncClient, platform: Platform) -> None:
    b = await buy(client, platform, country="SK", count=8, stock=8)
    url = f"{API}/customer/services/{b.sid}/auto-renew"
    write_only = await b.account.key({"services:write"})
    r = await client.put(url, json={"auto_renew": True}, headers=bearer(write_only))
    assert r.status_code == 403 and r.json()["detail"]["missing_scopes"] == ["wallet:spend"]
    assert (await service(client, b))["auto_renew"] is False
    on = await auto_renew(client, b)
    assert on["auto_renew"] is True and on["next_renewal_at"] is not None
    r = await client.put(url, json={"auto_renew": False}, headers=bearer(write_only))
    assert r.status_code == 200 and r.json()["auto_renew"] is False
    assert (await service(client, b))["auto_renew"] is False
