"""GET /customer/services, GET /customer/services/{id}, renew, cancel (refund per the pricing module)."""

from __future__ import annotations

import uuid
from datetime import timedelta

import httpx
import pytest
from sqlalchemy import update

from proxyplane.core.clock import utcnow
from proxyplane.domains.pricing import refund_unused
from proxyplane.platform import Platform
from proxyplane.storage.models import Service
from tests.adapters.rest.test_order import ORDER, balance, body
from tests.domains.stock.support import fresh_stock
from tests.support import Account, bearer

pytestmark = pytest.mark.anyio


async def _order(client: httpx.AsyncClient, platform: Platform, key: str, months: int = 1) -> dict:
    await fresh_stock(platform, "proxy_datacenter", "IS", 10)
    r = await client.post(ORDER, json=body(count=8, period_months=months), headers=bearer(key))
    assert r.status_code == 201, r.text
    return r.json()


async def _age(platform: Platform, service_id: str, days: int) -> None:
    """Move a service's term `days` into the past (as if bought earlier)."""
    async with platform.db.unit_of_work() as uow:
        svc = await uow.session.get(Service, (await _number(platform, service_id)))
        assert svc is not None and svc.current_period_start and svc.current_period_end
        await uow.session.execute(
            update(Service)
            .where(Service.number == svc.number)
            .values(
                current_period_start=svc.current_period_start - timedelta(days=days),
                current_period_end=svc.current_period_end - timedelta(days=days),
            )
        )
        await uow.commit()


async def _number(platform: Platform, service_id: str) -> int:
    from proxyplane.domains.services.service import get_by_service_id

    async with platform.db.unit_of_work(write=False) as uow:
        svc = await get_by_service_id(uow.session, uuid.UUID(service_id))
        assert svc is not None
        return svc.number


async def test_list_get_and_other_customers_404(
    client: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    key = await account.key()
    await account.credit(10_000)
    sid = (await _order(client, platform, key))["service"]["service_id"]
    page = (await client.get("/api/v1/customer/services?limit=1", headers=bearer(key))).json()
    assert page["total"] == 1 and page["items"][0]["service_id"] == sid and page["limit"] == 1
    for bad in ("limit=0", "limit=101", "offset=-1"):
        assert (await client.get(f"/api/v1/customer/services?{bad}", headers=bearer(key))).status_code == 422
    other = await (await __import__("tests.support", fromlist=["make_account"]).make_account(platform)).key()
    for path in ("", "/cancel", "/renew"):
        method = client.get if not path else client.post
        kwargs = {"json": {"period_months": 1, "idempotency_key": "k"}} if path == "/renew" else {}
        r = await method(f"/api/v1/customer/services/{sid}{path}", headers=bearer(other), **kwargs)
        assert r.status_code == 404, path
    assert (
        await client.get(f"/api/v1/customer/services/{uuid.uuid4()}", headers=bearer(key))
    ).status_code == 404
    read_only = await account.key({"catalog:read"})
    assert (await client.get("/api/v1/customer/services", headers=bearer(read_only))).status_code == 403
    r = await client.post(f"/api/v1/customer/services/{sid}/cancel", headers=bearer(read_only))
    assert r.status_code == 403


async def test_renew_extends_and_charges_with_term_discount(
    client: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    key = await account.key()
    await account.credit(10_000)
    out = await _order(client, platform, key)
    svc = out["service"]
    before = await balance(client, key)
    no_spend = await account.key({"services:write", "services:read"})
    url = f"/api/v1/customer/services/{svc['service_id']}/renew"
    assert (
        await client.post(url, json={"period_months": 3, "idempotency_key": "a"}, headers=bearer(no_spend))
    ).status_code == 403
    assert (
        await client.post(url, json={"period_months": 2, "idempotency_key": "a"}, headers=bearer(key))
    ).status_code == 422
    r = await client.post(url, json={"period_months": 3, "idempotency_key": "r1"}, headers=bearer(key))
    assert r.status_code == 200, r.text
    monthly = svc["renewal_price_cents"]
    expected = monthly * 3 - (monthly * 3 * 5 + 50) // 100
    assert r.json()["charged_cents"] == expected and await balance(client, key) == before - expected
    assert r.json()["service"]["expires_at"] > svc["expires_at"]
    again = await client.post(url, json={"period_months": 3, "idempotency_key": "r1"}, headers=bearer(key))
    assert again.json() == r.json() and await balance(client, key) == before - expected


async def test_renew_402_when_wallet_short(
    client: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    key = await account.key()
    await account.credit(120)
    out = await _order(client, platform, key)
    assert out["amount_due_cents"] == 0
    left = await balance(client, key)
    r = await client.post(
        f"/api/v1/customer/services/{out['service']['service_id']}/renew",
        json={"period_months": 12, "idempotency_key": "x"},
        headers=bearer(key),
    )
    assert r.status_code == 402 and await balance(client, key) == left


@pytest.mark.parametrize("months,days_used", [(1, 0), (1, 10), (3, 45), (12, 200), (1, 40)])
async def test_cancel_refund_matches_pricing_module(
    client: httpx.AsyncClient, platform: Platform, account: Account, months: int, days_used: int
) -> None:
    key = await account.key()
    await account.credit(10_000)
    out = await _order(client, platform, key, months=months)
    sid = out["service"]["service_id"]
    await _age(platform, sid, days_used)
    svc = (await client.get(f"/api/v1/customer/services/{sid}", headers=bearer(key))).json()
    from datetime import datetime

    start, end = (datetime.fromisoformat(svc[k]) for k in ("current_period_start", "expires_at"))
    before = await balance(client, key)
    now = utcnow()
    r = await client.post(f"/api/v1/customer/services/{sid}/cancel", headers=bearer(key))
    assert r.status_code == 200
    refunded = r.json()["refunded_cents"]
    expected = refund_unused(out["total_cents"], start, end, now) if end > now else 0
    assert refunded == expected and await balance(client, key) == before + expected
    assert r.json()["service"]["status"] == "cancelled" and r.json()["service"]["ips"] == []
    again = await client.post(f"/api/v1/customer/services/{sid}/cancel", headers=bearer(key))
    assert again.status_code == 200 and again.json()["refunded_cents"] == refunded
    assert await balance(client, key) == before + expected
    if expected:
        entry = (await client.get("/api/v1/customer/wallet/ledger", headers=bearer(key))).json()["items"][0]
        assert entry["kind"] == "refund" and entry["service_id"] == sid


async def test_list_page_reads_ips_and_whitelists_in_fixed_statements(
    client: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    """A page of 4 services costs the same statements as a page of 1 (IPs and whitelists read per page,
    not per service), and shows the same IPs and whitelist as each service's own GET."""
    from sqlalchemy import event

    key = await account.key()
    await account.credit(50_000)
    for _ in range(4):
        await _order(client, platform, key)
    seen: list[str] = []

    def count(_conn: object, _cursor: object, statement: str, *_args: object) -> None:
        seen.append(statement)

    engine = platform.db.engine.sync_engine
    event.listen(engine, "before_cursor_execute", count)
    try:
        pages = {}
        for limit in (1, 4):
            seen.clear()
            r = await client.get(f"/api/v1/customer/services?limit={limit}", headers=bearer(key))
            assert r.status_code == 200, r.text
            pages[limit] = (len(seen), r.json()["items"])
    finally:
        event.remove(engine, "before_cursor_execute", count)
    assert pages[1][0] == pages[4][0]
    assert len(pages[4][1]) == 4
    for item in pages[4][1]:
        path = f"/api/v1/customer/services/{item['service_id']}"
        one = (await client.get(path, headers=bearer(key))).json()
        assert (item["ips"], item["whitelist_ips"]) == (one["ips"], one["whitelist_ips"])
        assert item["ip_count"] == 8 and item["whitelist_ips"]
