"""Service quotas over REST (issue 32) through the real app: the current period's use (used / left /
resets-at), add_traffic (priced per GB, paid from the wallet, idempotent, never a negative balance, 422
naming the field for bad GB), the auto top-up (at most N times a period), and the periods: a month quota
resets when its month ends, a term quota when a renewal is paid, a "none" package never."""

from __future__ import annotations

from datetime import timedelta

import httpx
import pytest
from sqlalchemy import update

from proxyplane.core.clock import utcnow
from proxyplane.domains.quotas import service as quotas
from proxyplane.domains.wallet.service import balance
from proxyplane.platform import Platform
from proxyplane.storage.models.quotas import ServiceQuota
from tests.domains.quotas.support import MIB, events_of, flush, metered_service, quota_row
from tests.domains.subusers.support import make_service
from tests.support import Account, bearer

pytestmark = pytest.mark.anyio
API = "/api/v1/customer/services"


async def wallet_of(platform: Platform, account: Account) -> int:
    async with platform.db.unit_of_work(write=False) as uow:
        return await balance(uow.session, account.customer_id)


async def test_quota_reads_and_add_traffic(
    client: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    svc = await metered_service(platform, account, 4 * MIB, gb_price_cents=250)
    h = bearer(await account.key())
    base = f"{API}/{svc.service_id}"
    q = (await client.get(f"{base}/quota", headers=h)).json()
    assert (q["period"], q["limit_bytes"], q["used_bytes"], q["left_bytes"]) == ("term", 4 * MIB, 0, 4 * MIB)
    assert q["exhausted"] is False and q["gb_price_cents"] == 250 and q["auto_topup"] is None

    await flush(platform, svc.service_id, 4 * MIB)  # used up: 80 % and 100 % in one flush
    q = (await client.get(f"{base}/quota", headers=h)).json()
    assert (q["used_bytes"], q["left_bytes"], q["exhausted"]) == (4 * MIB, 0, True)
    assert [e.type for e in await events_of(platform, account.customer_id)] == [
        "service.quota_80",
        "service.quota_100",
    ]
    assert (await quota_row(platform, svc.service_id)).limit_reached

    for bad in (0, -3, 10**9):
        r = await client.post(f"{base}/traffic", json={"gb": bad, "idempotency_key": f"bad{bad}"}, headers=h)
        assert r.status_code == 422 and "gb" in r.text, r.text
    r = await client.post(f"{base}/traffic", json={"gb": 2, "idempotency_key": "poor"}, headers=h)
    assert r.status_code == 402 and "insufficient_balance" in r.text, r.text
    assert await wallet_of(platform, account) == 0  # never below zero

    await account.credit(1_000)
    body = {"gb": 2, "idempotency_key": "buy-2"}
    r = await client.post(f"{base}/traffic", json=body, headers=h)
    assert r.status_code == 200, r.text
    out = r.json()
    assert out["charged_cents"] == 500 and out["balance_cents"] == 500
    assert out["quota"]["limit_bytes"] == 4 * MIB + 2 * quotas.GB and out["quota"]["exhausted"] is False
    again = await client.post(f"{base}/traffic", json=body, headers=h)  # a replay: charged once
    assert again.status_code == 200 and again.json() == out
    assert await wallet_of(platform, account) == 500
    row = await quota_row(platform, svc.service_id)
    assert not row.limit_reached and row.extra_bytes == 2 * quotas.GB
    r = await client.post(
        f"{base}/traffic", json={**body, "idempotency_key": "cap", "max_total_cents": 100}, headers=h
    )
    assert r.status_code == 409 and await wallet_of(platform, account) == 500

    plain = await make_service(platform, account, parameters={"exit_pool": "proxy_datacenter"})
    r = await client.post(
        f"{API}/{plain.service_id}/traffic", json={"gb": 1, "idempotency_key": "x"}, headers=h
    )
    assert r.status_code == 409, r.text
    assert (await client.get(f"{API}/{plain.service_id}/quota", headers=h)).status_code == 404


async def test_auto_topup_at_most_n_times(
    client: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    svc = await metered_service(platform, account, quotas.GB, gb_price_cents=100)
    h = bearer(await account.key())
    url = f"{API}/{svc.service_id}/traffic/auto-top-up"
    r = await client.put(
        url, json={"enabled": True, "threshold_pct": 0, "gb": 1, "max_per_period": 1}, headers=h
    )
    assert r.status_code == 422 and "threshold_pct" in r.text
    for not_a_boolean in (0, "yes"):  # the schema's boolean: no coercion (schemathesis' coverage phase)
        body = {"enabled": not_a_boolean, "threshold_pct": 90, "gb": 1, "max_per_period": 1}
        r = await client.put(url, json=body, headers=h)
        assert r.status_code == 422 and "enabled" in r.text, r.text
    r = await client.put(
        url, json={"enabled": True, "threshold_pct": 90, "gb": 1, "max_per_period": 1}, headers=h
    )
    assert r.status_code == 200 and r.json()["auto_topup"]["threshold_pct"] == 90, r.text

    await flush(platform, svc.service_id, quotas.GB * 95 // 100)  # 95 %, the wallet is empty: skipped
    row = await quota_row(platform, svc.service_id)
    assert (row.extra_bytes, row.auto_count) == (0, 0)
    await account.credit(300)
    await flush(platform, svc.service_id, 1)  # still >= 90 %: bought now
    row = await quota_row(platform, svc.service_id)
    assert (row.extra_bytes, row.auto_count, row.limit_reached) == (quotas.GB, 1, False)
    assert await wallet_of(platform, account) == 200
    await flush(platform, svc.service_id, 2 * quotas.GB)  # past the new limit: no second top-up this period
    row = await quota_row(platform, svc.service_id)
    assert (row.auto_count, row.limit_reached) == (1, True)
    assert await wallet_of(platform, account) == 200


async def test_periods_reset(client: httpx.AsyncClient, platform: Platform, account: Account) -> None:
    h = bearer(await account.key())
    month = await metered_service(platform, account, 4 * MIB, period="month")
    term = await metered_service(platform, account, 4 * MIB, period="term")
    package = await metered_service(platform, account, 4 * MIB, period="none")
    for svc in (month, term, package):
        await flush(platform, svc.service_id, 4 * MIB)
    q = (await client.get(f"{API}/{month.service_id}/quota", headers=h)).json()
    start, nxt = quotas.month_bounds(utcnow())
    assert q["resets_at"].startswith(nxt.isoformat()[:19]) and q["exhausted"]
    assert (await client.get(f"{API}/{package.service_id}/quota", headers=h)).json()["resets_at"] is None

    # the month ends: the next flush (any service's) starts the new month
    async with platform.db.unit_of_work() as uow:
        past = utcnow() - timedelta(seconds=1)
        await uow.session.execute(
            update(ServiceQuota).where(ServiceQuota.service_id == month.service_id).values(resets_at=past)
        )
        await uow.commit()
    await flush(platform, package.service_id, 1)
    row = await quota_row(platform, month.service_id)
    assert (row.used_bytes, row.limit_reached, row.resets_at) == (0, False, nxt)
    # a paid renewal starts a term quota's new period; the package never resets
    async with platform.db.unit_of_work() as uow:
        await quotas.renewed(uow.session, term.service_id, utcnow())
        await quotas.renewed(uow.session, package.service_id, utcnow())
        await uow.commit()
    assert (await quota_row(platform, term.service_id)).used_bytes == 0
    assert (await quota_row(platform, package.service_id)).limit_reached


async def test_demo_catalog_sells_a_package_a_monthly_plan_and_pay_as_you_go(
    client: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    from tests.gateway.test_store_static import buy

    payg = await buy(client, platform, account, "Rotating datacenter: pay as you go")
    q = (await client.get(f"{API}/{payg['service_id']}/quota", headers=bearer(payg["key"]))).json()
    assert (q["period"], q["resets_at"], q["gb_price_cents"]) == ("payg", None, 200)
    unit = q["payg"]
    assert (unit["unit_bytes"], unit["unit_cents"], unit["billed_units"]) == (quotas.GB, 200, 0)

    package = await buy(client, platform, account, "Traffic package: 1 GB")
    monthly = await buy(client, platform, account, "Rotating datacenter: 10 GB")
    h = bearer(package["key"])
    q = (await client.get(f"{API}/{package['service_id']}/quota", headers=h)).json()
    assert (q["period"], q["limit_bytes"], q["resets_at"], q["gb_price_cents"]) == (
        "none",
        quotas.GB,
        None,
        150,
    )
    q = (await client.get(f"{API}/{monthly['service_id']}/quota", headers=h)).json()
    assert (q["period"], q["gb_price_cents"]) == ("month", 100) and q["quota_bytes"] >= 10 * quotas.GB
    assert q["resets_at"].startswith(quotas.month_bounds(utcnow())[1].isoformat()[:19])


async def test_account_limits_show_the_quota_left_and_when_it_resets(
    client: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    svc = await metered_service(platform, account, 4 * MIB, period="month")
    await flush(platform, svc.service_id, 4 * MIB * 85 // 100)
    limits = (await client.get("/api/v1/customer/limits", headers=bearer(await account.key()))).json()
    (q,) = [q for q in limits["bandwidth_quotas"] if q["service_id"] == str(svc.service_id)]
    assert (q["quota_bytes"], q["left_bytes"], q["period"], q["near"]) == (
        4 * MIB,
        4 * MIB * 15 // 100 + 1,
        "month",
        True,
    )
    assert q["resets_at"] is not None
    assert any(str(svc.service_id) in w and "add_traffic" in w for w in limits["warnings"])
