"""Order and service events are written with the change: order placed from the wallet, cancelled; a
rolled-back cancellation and a refused order emit nothing."""

from __future__ import annotations

import uuid

import httpx
import pytest
from sqlalchemy import select

from proxyplane.domains.services import service as services
from proxyplane.platform import Platform
from proxyplane.storage.models import Event
from tests.domains.stock.support import fresh_stock
from tests.support import Account, bearer

pytestmark = pytest.mark.anyio
ORDER = "/api/v1/billing/composite/order"


def order(count: int) -> dict:
    return {
        "product_kind": "proxy_datacenter",
        "period_months": 1,
        "segments": [{"country": "LU", "count": count}],
        "geo_source": "maxmind",
        "whitelist_ips": ["127.0.0.9"],
        "use_balance": True,
        "idempotency_key": uuid.uuid4().hex,
    }


async def events(platform: Platform, customer_id: int) -> list[Event]:
    async with platform.db.unit_of_work(write=False) as uow:
        rows = await uow.session.execute(
            select(Event)
            .where(
                Event.customer_id == customer_id, Event.type.like("order.%") | Event.type.like("service.%")
            )
            .order_by(Event.created_at)
        )
        return list(rows.scalars())


async def test_order_and_cancel_events(
    client: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    await fresh_stock(platform, "proxy_datacenter", "LU", 12)
    key = await account.key()
    await account.credit(100_000)
    refused = await client.post(ORDER, json=order(50), headers=bearer(key))  # more than in stock
    assert refused.status_code >= 400 and await events(platform, account.customer_id) == []
    r = await client.post(ORDER, json=order(10), headers=bearer(key))
    assert r.status_code == 201, r.text
    service_id = r.json()["service"]["service_id"]
    got = await events(platform, account.customer_id)
    assert [e.type for e in got] == ["order.created", "order.paid", "service.activated"]
    assert all(e.data["service_id"] == service_id for e in got)
    assert got[0].data["amount_due_cents"] == 0 and got[0].data["total_cents"] == r.json()["total_cents"]

    async with platform.db.unit_of_work() as uow:  # a cancellation that is rolled back emits nothing
        svc = await services.get_owned(uow.session, account.customer_id, uuid.UUID(service_id))
        await services.cancel(uow.session, svc)
        await uow.rollback()
    assert len(await events(platform, account.customer_id)) == 3

    r = await client.post(f"/api/v1/customer/services/{service_id}/cancel", headers=bearer(key))
    assert r.status_code == 200, r.text
    cancelled = (await events(platform, account.customer_id))[-1]
    assert cancelled.type == "service.cancelled" and cancelled.data["status"] == "cancelled"
    assert cancelled.data["refund_cents"] > 0
