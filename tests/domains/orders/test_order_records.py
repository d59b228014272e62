"""An order's records are the same whichever path writes them (issue 15): on PostgreSQL a customer without
webhook endpoints gets the invoice, its lines, the ledger entry and the events from the order's one
paid-in-full statement (service numbers and the balance after filled in by the database), SQLite writes
them one statement each. Checked on both: the values, their links and the balance-low crossing."""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select

from proxyplane.core.clock import utcnow
from proxyplane.core.product_names import humanize
from proxyplane.domains.wallet import service as wallet
from proxyplane.platform import Platform
from proxyplane.storage.models import Event, LedgerEntry, Wallet, WebhookDelivery, WebhookEndpoint
from proxyplane.storage.models.billing import Invoice, InvoiceItem
from tests.domains.stock.support import fresh_stock
from tests.support import bearer, make_account

pytestmark = pytest.mark.anyio
ORDER = "/api/v1/billing/composite/order"


async def _order(client: httpx.AsyncClient, key: str) -> dict[str, Any]:
    body = {
        "product_kind": "proxy_isp",
        "period_months": 1,
        "segments": [{"country": "IS", "count": 2}],
        "whitelist_ips": ["127.0.0.9", "127.0.0.10"],
        "use_balance": True,
        "idempotency_key": uuid.uuid4().hex,
    }
    r = await client.post(ORDER, json=body, headers=bearer(key))
    assert r.status_code == 201, r.text
    return r.json()  # type: ignore[no-any-return]


async def test_invoice_ledger_and_events_of_a_paid_order(
    client: httpx.AsyncClient, platform: Platform
) -> None:
    await fresh_stock(platform, "proxy_isp", "IS", 4)
    account = await make_account(platform)
    await account.credit(1_000_000)
    key = await account.key()
    first = await _order(client, key)
    total = first["total_cents"]
    after_first = 1_000_000 - total
    threshold = after_first - total // 2  # the second order crosses it
    r = await client.patch(
        "/api/v1/customer/me/notifications",
        json={"balance_low_threshold_cents": threshold},
        headers=bearer(key),
    )
    assert r.status_code == 200
    out = await _order(client, key)
    number, sid = out["order_id"], out["service"]["service_id"]
    assert out["service"]["whitelist_ips"] == ["127.0.0.9", "127.0.0.10"]
    after = after_first - total
    async with platform.db.unit_of_work() as uow:
        s = uow.session
        invoice = (await s.execute(select(Invoice).where(Invoice.service_id == uuid.UUID(sid)))).scalar_one()
        lines = (
            (await s.execute(select(InvoiceItem).where(InvoiceItem.invoice_id == invoice.id))).scalars().all()
        )
        entry = (
            await s.execute(select(LedgerEntry).where(LedgerEntry.service_id == uuid.UUID(sid)))
        ).scalar_one()
        events = (
            (
                await s.execute(
                    select(Event).where(Event.customer_id == account.customer_id).order_by(Event.created_at)
                )
            )
            .scalars()
            .all()
        )
        ledger_sum = await s.scalar(
            select(func.sum(LedgerEntry.amount_cents)).where(LedgerEntry.customer_id == account.customer_id)
        )
        balance = await s.scalar(
            select(Wallet.balance_cents).where(Wallet.customer_id == account.customer_id)
        )
    text = f"Order #{number}: 2 proxy_isp IPs, 1 month(s)"
    assert (invoice.description, invoice.status, invoice.payment_method) == (humanize(text), "paid", "wallet")
    assert invoice.total_cents == total == sum(line.amount_cents for line in lines)
    assert invoice.paid_at is not None and invoice.deposit_id is None
    assert (entry.amount_cents, entry.balance_after_cents, entry.kind) == (-total, after, "purchase")
    assert (entry.description, entry.invoice_id) == (text, str(invoice.id))
    assert ledger_sum == balance == after
    rank = {"wallet.balance_low": 0, "order.created": 1, "order.paid": 2, "service.activated": 3}
    mine = sorted(  # stamped one by one in this order (equal stamps possible: the rank breaks ties)
        (e for e in events if e.type == "wallet.balance_low" or e.data.get("service_id") == sid),
        key=lambda e: (e.created_at, rank.get(e.type, 9)),
    )
    assert [e.type for e in mine] == [
        "wallet.balance_low",
        "order.created",
        "order.paid",
        "service.activated",
    ]
    assert mine[0].data == {"balance_cents": after, "threshold_cents": threshold}
    created = mine[1].data
    assert created["number"] == number and created["status"] == "active"
    assert (created["total_cents"], created["wallet_paid_cents"], created["amount_due_cents"]) == (
        total,
        total,
        0,
    )
    assert mine[2].data["total_cents"] == total and mine[3].data["segments"] == [
        {"country": "IS", "count": 2}
    ]
    # the first order crossed nothing: one balance-low event in all
    assert sum(e.type == "wallet.balance_low" for e in events) == 1


async def test_two_orders_racing_for_one_balance(client: httpx.AsyncClient, platform: Platform) -> None:
    """Both orders see a balance for one (PostgreSQL: the paid-in-full statement of the later one finds
    it gone and the order continues on the general path): one is paid from the wallet, the other takes
    what is left and waits for its checkout; never a negative balance, the ledger sums to it."""
    await fresh_stock(platform, "proxy_isp", "IS", 4)
    account = await make_account(platform)
    await account.credit(1_000_000)
    key = await account.key()
    total = (await _order(client, key))["total_cents"]
    async with platform.db.unit_of_work() as uow:  # leave one and a half orders' worth
        await wallet.debit(
            uow.session, account.customer_id, 1_000_000 - total - (total + total // 2), "purchase", "t"
        )
        await uow.commit()
    outs = await asyncio.gather(_order(client, key), _order(client, key))
    due = sorted(o["amount_due_cents"] for o in outs)
    assert due == [0, total - total // 2], outs
    assert sorted(o["service"]["status"] for o in outs) == ["active", "pending"]
    async with platform.db.unit_of_work() as uow:
        s = uow.session
        ledger_sum = await s.scalar(
            select(func.sum(LedgerEntry.amount_cents)).where(LedgerEntry.customer_id == account.customer_id)
        )
        balance = await s.scalar(
            select(Wallet.balance_cents).where(Wallet.customer_id == account.customer_id)
        )
    assert ledger_sum == balance == 0


async def test_deliveries_of_an_order_to_subscribed_endpoints(
    client: httpx.AsyncClient, platform: Platform
) -> None:
    """One delivery per (event, subscribed enabled endpoint), in event order then endpoint age, whichever
    path writes them (PostgreSQL: the paid-in-full statement; SQLite: events.emit_many)."""
    await fresh_stock(platform, "proxy_isp", "IS", 2)
    account = await make_account(platform)
    await account.credit(1_000_000)
    key = await account.key()
    now = utcnow()
    choices = {"all": [], "paid": ["order.paid", "ticket.replied"], "off": [], "none": ["ticket.replied"]}
    async with platform.db.unit_of_work() as uow:
        for i, (name, types) in enumerate(choices.items()):
            uow.session.add(
                WebhookEndpoint(
                    customer_id=account.customer_id,
                    url=f"http://127.0.0.1:9/{name}",
                    event_types=types,
                    secret_encrypted="unused",
                    enabled=name != "off",
                    created_at=now + timedelta(seconds=i),
                )
            )
        await uow.commit()
    sid = (await _order(client, key))["service"]["service_id"]
    async with platform.db.unit_of_work() as uow:
        got = (
            await uow.session.execute(
                select(Event.type, WebhookEndpoint.url, WebhookDelivery.status, WebhookDelivery.attempts)
                .join(Event, Event.id == WebhookDelivery.event_id)
                .join(WebhookEndpoint, WebhookEndpoint.id == WebhookDelivery.endpoint_id)
                .where(WebhookDelivery.customer_id == account.customer_id)
                .order_by(WebhookDelivery.id)
            )
        ).all()
        public_ids = (
            await uow.session.execute(
                select(WebhookDelivery.public_id).where(WebhookDelivery.customer_id == account.customer_id)
            )
        ).scalars()
        assert len(set(public_ids)) == 4
        events = await uow.session.execute(select(Event.data).where(Event.customer_id == account.customer_id))
        assert {e.get("service_id") for (e,) in events} - {None} == {sid}
    url = "http://127.0.0.1:9/"
    assert [(t, u.removeprefix(url)) for t, u, _, _ in got] == [
        ("order.created", "all"),
        ("order.paid", "all"),
        ("order.paid", "paid"),
        ("service.activated", "all"),
    ]
    assert {(status, attempts) for _, _, status, attempts in got} == {("pending", 0)}
