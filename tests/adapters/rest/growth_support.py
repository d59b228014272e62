"""Helpers for the issue-5 tests: a customer with an active service bought through the real order API."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import httpx
from sqlalchemy import select, update

from proxyplane.platform import Platform
from proxyplane.storage.models import Service, StockIp
from tests.domains.stock.support import fresh_stock
from tests.support import Account, bearer, make_account

API = "/api/v1"


@dataclass
class Bought:
    account: Account
    key: str
    service: dict[str, Any]

    @property
    def sid(self) -> str:
        return str(self.service["service_id"])

    @property
    def headers(self) -> dict[str, str]:
        return bearer(self.key)


async def buy(
    client: httpx.AsyncClient,
    platform: Platform,
    *,
    country: str,
    count: int = 4,
    stock: int | None = 12,
    credit: int = 100_000,
    months: int = 1,
    capacity: int | None = 1,
) -> Bought:
    """A new account with `credit` cents and an active datacenter service of `count` IPs in `country`
    (with `stock` fresh IPs of capacity `capacity` there; None keeps the current stock)."""
    if stock is not None:
        await fresh_stock(platform, "proxy_datacenter", country, stock, capacity=capacity)
    account = await make_account(platform)
    key = await account.key()
    await account.credit(credit)
    body = {
        "product_kind": "proxy_datacenter",
        "period_months": months,
        "segments": [{"country": country, "count": count}],
        "geo_source": "maxmind",
        "whitelist_ips": ["127.0.0.9"],
        "use_balance": True,
        "idempotency_key": uuid.uuid4().hex,
    }
    r = await client.post(f"{API}/billing/composite/order", json=body, headers=bearer(key))
    assert r.status_code == 201, r.text
    return Bought(account, key, r.json()["service"])


async def balance(client: httpx.AsyncClient, key: str) -> int:
    r = await client.get(f"{API}/customer/wallet/balance", headers=bearer(key))
    return int(r.json()["balance_cents"])


async def service(client: httpx.AsyncClient, b: Bought) -> dict[str, Any]:
    r = await client.get(f"{API}/customer/services/{b.sid}", headers=b.headers)
    assert r.status_code == 200, r.text
    return dict(r.json())


async def age(platform: Platform, service_id: str, days: float) -> None:
    """Move a service's term `days` into the past (as if bought earlier)."""
    async with platform.db.unit_of_work() as uow:
        svc = (
            await uow.session.execute(select(Service).where(Service.service_id == uuid.UUID(service_id)))
        ).scalar_one()
        assert svc.current_period_start and svc.current_period_end
        shift = timedelta(days=days)
        await uow.session.execute(
            update(Service)
            .where(Service.number == svc.number)
            .values(
                current_period_start=svc.current_period_start - shift,
                current_period_end=svc.current_period_end - shift,
                started_at=(svc.started_at or svc.current_period_start) - shift,
            )
        )
        await uow.commit()


async def load(platform: Platform, service_id: str) -> Service:
    async with platform.db.unit_of_work(write=False) as uow:
        return (
            await uow.session.execute(select(Service).where(Service.service_id == uuid.UUID(service_id)))
        ).scalar_one()


async def assigned(platform: Platform, addresses: list[str]) -> dict[str, int]:
    async with platform.db.unit_of_work(write=False) as uow:
        rows = await uow.session.execute(
            select(StockIp.address, StockIp.assigned_count).where(StockIp.address.in_(addresses))
        )
        return {a: int(n) for a, n in rows.all()}
