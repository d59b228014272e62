"""Events of a growing service, written with the change: service.ips_added, service.ips_replaced (old and
new IPs), addon.activated / addon.cancelled, and the renewal job's service.renewal_failed (once per term),
service.suspended, service.expiring_soon (once per term), service.expired. Refused or rolled-back changes
emit nothing."""

from __future__ import annotations

import uuid
from datetime import timedelta

import httpx
import pytest
from sqlalchemy import select

from proxyplane.core.settings import Settings
from proxyplane.domains.addons import service as addons
from proxyplane.domains.ips import service as ips
from proxyplane.domains.renewals.service import RenewalPolicy
from proxyplane.domains.services import service as services
from proxyplane.jobs.renewal_pass import run_pass
from proxyplane.platform import Platform
from proxyplane.storage.models import Event
from tests.adapters.rest.growth_support import API, Bought, buy, load

pytestmark = pytest.mark.anyio
POLICY = RenewalPolicy(
    renew_before=timedelta(days=1), grace=timedelta(days=3), expiring_soon=timedelta(days=3)
)


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.model_copy(update={"webhooks_allow_http_loopback": True})


async def events(platform: Platform, b: Bought, prefix: str = "") -> list[Event]:
    async with platform.db.unit_of_work(write=False) as uow:
        rows = await uow.session.execute(
            select(Event)
            .where(Event.customer_id == b.account.customer_id, Event.type.like(f"{prefix}%"))
            .order_by(Event.created_at)
        )
        return [e for e in rows.scalars() if e.data.get("service_id") == b.sid]


async def endpoint(client: httpx.AsyncClient, b: Bought, types: list[str]) -> str:
    body = {"url": "http://127.0.0.1:9/hook", "event_types": types}
    r = await client.post(f"{API}/customer/webhooks", json=body, headers=b.headers)
    assert r.status_code == 201, r.text
    return str(r.json()["endpoint_id"])


async def delivered(client: httpx.AsyncClient, b: Bought, ep: str) -> list[dict]:
    r = await client.get(f"{API}/customer/webhooks/{ep}/deliveries", headers=b.headers)
    return [d["payload"] for d in r.json()["items"]]


async def test_ips_added_and_replaced(client: httpx.AsyncClient, platform: Platform) -> None:
    b = await buy(client, platform, country="LT", count=8, stock=12)
    ep = await endpoint(client, b, ["service.ips_added", "service.ips_replaced"])
    r = await client.post(
        f"{API}/billing/services/{b.sid}/add-ips",
        json={"segments": [{"country": "LT", "count": 2}], "idempotency_key": "a1"},
        headers=b.headers,
    )
    assert r.status_code == 200, r.text
    added = await events(platform, b, "service.ips_added")
    assert len(added) == 1
    data = added[0].data
    assert sorted(i["ip"] for i in data["ips"]) == sorted(i["ip"] for i in r.json()["new_ips"])
    assert data["charged_cents"] == r.json()["charged_cents"] and data["ip_count"] == 10
    assert data["invoice_id"] == str(r.json()["invoice_id"])

    before = [
        i["ip"]
        for i in (await client.get(f"{API}/customer/services/{b.sid}", headers=b.headers)).json()["ips"]
    ]
    r = await client.post(
        f"{API}/customer/services/{b.sid}/proxy/refresh",
        json={"target_ips": before[:1], "idempotency_key": "r1"},
        headers=b.headers,
    )
    assert r.status_code in (200, 201), r.text
    replaced = await events(platform, b, "service.ips_replaced")
    assert len(replaced) == 1
    data = replaced[0].data
    assert data["old_ips"] == before[:1] and data["new_ips"] == [r.json()["replaced"][0]["new"]]
    assert data["new_ips"][0] not in before and data["charged_cents"] == r.json()["charged_cents"]
    payloads = await delivered(client, b, ep)
    assert sorted(p["type"] for p in payloads) == ["service.ips_added", "service.ips_replaced"]
    by_type = {p["type"]: p for p in payloads}
    assert by_type["service.ips_replaced"]["data"]["old_ips"] == before[:1]


async def test_refused_and_rolled_back_changes_emit_nothing(
    client: httpx.AsyncClient, platform: Platform
) -> None:
    b = await buy(client, platform, country="LV", count=8, stock=16, credit=120)  # 8 x 15: wallet empty
    r = await client.post(
        f"{API}/billing/services/{b.sid}/add-ips",
        json={"segments": [{"country": "LV", "count": 2}], "idempotency_key": "a1"},
        headers=b.headers,
    )
    assert r.status_code == 402, r.text
    r = await client.post(
        f"{API}/billing/services/{b.sid}/addons",
        json={"addon_type": "udp", "expected_price_cents": 1, "idempotency_key": "u1"},
        headers=b.headers,
    )
    assert r.status_code in (402, 409), r.text
    async with platform.db.unit_of_work() as uow:  # a free refresh that is rolled back
        svc = await services.get_owned(uow.session, b.account.customer_id, uuid.UUID(b.sid))
        await ips.refresh(uow.session, svc, None, 0, can_spend=True)
        await uow.rollback()
    assert await events(platform, b, "service.ips") == [] and await events(platform, b, "addon.") == []


async def test_addon_activated_and_cancelled(client: httpx.AsyncClient, platform: Platform) -> None:
    b = await buy(client, platform, country="LU", count=8, stock=8)
    ep = await endpoint(client, b, ["addon.activated", "addon.cancelled"])
    offers = (await client.get(f"{API}/billing/services/{b.sid}/addons/available", headers=b.headers)).json()
    offer = next(o for o in offers["items"] if o["addon_type"] == "extra_connections")
    r = await client.post(
        f"{API}/billing/services/{b.sid}/addons",
        json={
            "addon_type": "extra_connections",
            "expected_price_cents": offer["price_cents"],
            "idempotency_key": "c1",
        },
        headers=b.headers,
    )
    assert r.status_code == 201, r.text
    addon_id = r.json()["addon"]["addon_id"]
    async with platform.db.unit_of_work() as uow:  # a cancellation rolled back: nothing
        svc = await services.get_owned(uow.session, b.account.customer_id, uuid.UUID(b.sid))
        await addons.cancel(uow.session, await addons.get_addon(uow.session, svc, uuid.UUID(addon_id)))
        await uow.rollback()
    assert [e.type for e in await events(platform, b, "addon.")] == ["addon.activated"]
    d = await client.delete(f"{API}/billing/services/{b.sid}/addons/{addon_id}", headers=b.headers)
    assert d.status_code == 200, d.text
    await client.delete(f"{API}/billing/services/{b.sid}/addons/{addon_id}", headers=b.headers)  # repeat
    got = await events(platform, b, "addon.")
    assert [e.type for e in got] == ["addon.activated", "addon.cancelled"]
    assert got[0].data["addon_id"] == addon_id and got[0].data["charged_cents"] == offer["price_cents"]
    assert got[0].data["parameters"] == {"connections": 100}
    assert got[1].data["refunded_cents"] == d.json()["refunded_cents"] and got[1].data["status"] == "canceled"
    payloads = await delivered(client, b, ep)
    assert sorted(p["type"] for p in payloads) == ["addon.activated", "addon.cancelled"]


async def test_renewal_failed_once_then_suspended_then_expired(
    client: httpx.AsyncClient, platform: Platform
) -> None:
    b = await buy(client, platform, country="EE", count=8, stock=8, credit=130)  # 10 cents left
    r = await client.put(
        f"{API}/customer/services/{b.sid}/auto-renew", json={"auto_renew": True}, headers=b.headers
    )
    assert r.status_code == 200, r.text
    end = (await load(platform, b.sid)).current_period_end
    assert end is not None
    for hours in (20, 10):  # two passes inside the renewal window, both short: one event
        report = await run_pass(platform.db, end - timedelta(hours=hours), POLICY)
        assert uuid.UUID(b.sid) in report.short
    failed = await events(platform, b, "service.renewal_failed")
    assert len(failed) == 1 and failed[0].data["reason"] == "insufficient_balance"
    assert failed[0].data["balance_cents"] == 10 and failed[0].data["required_cents"] > 10
    assert await events(platform, b, "service.suspended") == []
    report = await run_pass(platform.db, end + timedelta(hours=1), POLICY)
    assert uuid.UUID(b.sid) in report.suspended
    suspended = await events(platform, b, "service.suspended")
    assert len(suspended) == 1 and suspended[0].data["status"] == "suspended"
    assert suspended[0].data["reason"] == "non_payment"
    assert len(await events(platform, b, "service.renewal_failed")) == 1
    await run_pass(platform.db, end + timedelta(days=4), POLICY)
    expired = await events(platform, b, "service.expired")
    assert len(expired) == 1 and expired[0].data["reason"] == "terminated_after_grace"


async def test_expiring_soon_once_per_term(client: httpx.AsyncClient, platform: Platform) -> None:
    b = await buy(client, platform, country="FI", count=8, stock=8)
    svc = await load(platform, b.sid)
    end = svc.current_period_end
    assert end is not None and not svc.auto_renew
    await run_pass(platform.db, end - timedelta(days=4), POLICY)
    assert await events(platform, b, "service.expiring_soon") == []
    for hours in (70, 30, 1):
        await run_pass(platform.db, end - timedelta(hours=hours), POLICY)
    soon = await events(platform, b, "service.expiring_soon")
    assert len(soon) == 1 and soon[0].data["expires_at"] == end.isoformat()
    # a manual renewal starts a new term: one more warning before its end
    r = await client.post(
        f"{API}/customer/services/{b.sid}/renew",
        json={"period_months": 1, "idempotency_key": "m1"},
        headers=b.headers,
    )
    assert r.status_code == 200, r.text
    new_end = (await load(platform, b.sid)).current_period_end
    assert new_end is not None and new_end > end
    await run_pass(platform.db, end - timedelta(hours=1), POLICY)
    assert len(await events(platform, b, "service.expiring_soon")) == 1
    await run_pass(platform.db, new_end - timedelta(hours=5), POLICY)
    assert len(await events(platform, b, "service.expiring_soon")) == 2
    await run_pass(platform.db, new_end + timedelta(hours=1), POLICY)
    expired = await events(platform, b, "service.expired")
    assert len(expired) == 1 and expired[0].data["reason"] == "term_ended"
