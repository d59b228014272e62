"""Unpaid checkouts expire (injected clock): after the TTL the renewal job cancels the pending order,
refunds the wallet part, releases the IPs, voids the invoice and marks the deposit expired; a payment
confirmed after that credits the wallet (with a top-up invoice) and does not activate the order. Before
the TTL, and for a paid checkout, nothing happens."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import httpx
import pytest

from proxyplane.domains.renewals.service import RenewalPolicy
from proxyplane.jobs.renewal_pass import run_pass
from proxyplane.platform import Platform
from proxyplane.storage.models import Deposit
from tests.adapters.rest.growth_support import API, assigned, balance
from tests.domains.stock.support import fresh_stock
from tests.support import Account, bearer

pytestmark = pytest.mark.anyio
POLICY = RenewalPolicy(checkout_ttl=timedelta(minutes=30))


async def order(client: httpx.AsyncClient, key: str, country: str) -> dict[str, Any]:
    body = {
        "product_kind": "proxy_datacenter",
        "period_months": 1,
        "segments": [{"country": country, "count": 8}],
        "geo_source": "maxmind",
        "whitelist_ips": ["127.0.0.9"],
        "use_balance": True,
        "idempotency_key": uuid.uuid4().hex,
    }
    r = await client.post(f"{API}/billing/composite/order", json=body, headers=bearer(key))
    assert r.status_code == 201, r.text
    out = dict(r.json())
    assert out["service"]["status"] == "pending" and out["amount_due_cents"] > 0
    return out


async def pay(client: httpx.AsyncClient, platform: Platform, out: dict[str, Any]) -> None:
    body, headers = platform.processor().signed_callback(  # type: ignore[attr-defined]
        uuid.UUID(out["deposit_id"]), "paid", out["amount_due_cents"]
    )
    r = await client.post(f"{API}/payments/test/callback", content=body, headers=headers)
    assert r.status_code == 200, r.text


async def deposit_of(platform: Platform, out: dict[str, Any]) -> Deposit:
    async with platform.db.unit_of_work(write=False) as uow:
        found = await uow.session.get(Deposit, uuid.UUID(out["deposit_id"]))
        assert found is not None
        return found


async def test_unpaid_checkout_expires_and_a_late_payment_credits_the_wallet(
    client: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    stock = await fresh_stock(platform, "proxy_datacenter", "GR", 8)
    key = await account.key()
    await account.credit(50)
    out = await order(client, key, "GR")
    sid = uuid.UUID(out["service"]["service_id"])
    assert await balance(client, key) == 0 and sum((await assigned(platform, stock)).values()) == 8
    opened = (await deposit_of(platform, out)).created_at

    early = await run_pass(platform.db, opened + timedelta(minutes=29), POLICY)
    assert sid not in early.checkouts_expired and (await deposit_of(platform, out)).status == "pending"

    report = await run_pass(platform.db, opened + timedelta(minutes=31), POLICY)
    assert report.checkouts_expired.count(sid) == 1 and sid in report.changed
    svc = (await client.get(f"{API}/customer/services/{sid}", headers=bearer(key))).json()
    assert svc["status"] == "cancelled"
    assert await balance(client, key) == 50  # the wallet part is back
    assert sum((await assigned(platform, stock)).values()) == 0  # the IPs are back in stock
    assert (await deposit_of(platform, out)).status == "expired"
    invoices = (await client.get(f"{API}/customer/invoices", headers=bearer(key))).json()["items"]
    assert [(i["kind"], i["status"]) for i in invoices] == [("order", "void")]
    again = await run_pass(platform.db, opened + timedelta(minutes=90), POLICY)  # nothing more
    assert sid not in again.checkouts_expired and await balance(client, key) == 50

    await pay(client, platform, out)  # the processor confirms after the expiry
    assert (await deposit_of(platform, out)).status == "paid"
    svc = (await client.get(f"{API}/customer/services/{sid}", headers=bearer(key))).json()
    assert svc["status"] == "cancelled"  # not revived
    assert await balance(client, key) == 50 + out["amount_due_cents"]  # the payment is in the wallet
    invoices = (await client.get(f"{API}/customer/invoices", headers=bearer(key))).json()["items"]
    assert sorted((i["kind"], i["status"], i["total_cents"]) for i in invoices) == sorted(
        [("order", "void", out["total_cents"]), ("deposit", "paid", out["amount_due_cents"])]
    )
    await pay(client, platform, out)  # a repeated callback credits nothing more
    assert await balance(client, key) == 50 + out["amount_due_cents"]


async def test_paid_checkout_is_left_alone(
    client: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    await fresh_stock(platform, "proxy_datacenter", "LU", 8)
    key = await account.key()
    out = await order(client, key, "LU")
    await pay(client, platform, out)
    opened = (await deposit_of(platform, out)).created_at
    report = await run_pass(platform.db, opened + timedelta(hours=2), POLICY)
    sid = uuid.UUID(out["service"]["service_id"])
    assert sid not in report.checkouts_expired
    svc = (await client.get(f"{API}/customer/services/{sid}", headers=bearer(key))).json()
    assert svc["status"] == "active"
