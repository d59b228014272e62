"""The records an order writes besides its service row (issue 15; the statements are storage's since
issue 31: storage/repos/services.py writes the service row and its whitelist, storage/repos/orders.py the
merged PostgreSQL statement). On the lean PostgreSQL path, for a customer without enabled webhook
endpoints, the invoice, its lines, the ledger entry of the wallet part and the order's events are one
statement (`record_order_pg`); else the separate writes (invoices/orders.record_order,
wallet.record_withdrawal, events order_placed).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.core.clock import utcnow
from proxyplane.core.product_names import humanize
from proxyplane.domains.apikeys import caps
from proxyplane.domains.events import services as service_events
from proxyplane.domains.invoices import orders as order_invoice
from proxyplane.domains.invoices.service import quote_invoice_lines
from proxyplane.domains.orders.context import OrderContext
from proxyplane.domains.pricing import Quote
from proxyplane.domains.wallet import service as wallet
from proxyplane.storage.models import Service
from proxyplane.storage.repos import orders as repo


def order_description(svc: Service, quote: Quote) -> str:
    """The text of the order's ledger entry; its invoice's is the same, humanized."""
    return f"Order #{svc.number}: {quote.ip_count} {quote.product_kind} IPs, {quote.period_months} month(s)"


def payment_method(wallet_cents: int, due_cents: int, checkout_method: str) -> str:
    if due_cents == 0:
        return "wallet"
    return f"wallet + {checkout_method}" if wallet_cents else checkout_method


async def record_order_pg(
    session: AsyncSession,
    svc: Service,
    quote: Quote,
    wallet_cents: int,
    balance_after_cents: int,
    due_cents: int,
    checkout_method: str,
    deposit_id: uuid.UUID | None,
    events: Sequence[tuple[str, dict[str, Any], datetime]],
) -> int:
    """PostgreSQL: the invoice (as invoices/orders.record_order), its lines, the ledger entry of the
    wallet part (as wallet.record_withdrawal writes it, linked to the invoice) and the events (as
    events.emit_many, for a customer without enabled webhook endpoints) in one statement. Returns the
    invoice id (the price guard's count is the repository's). The caller has charged the key's cap."""
    now = utcnow()
    lines = quote_invoice_lines(quote)
    description = humanize(order_description(svc, quote))
    ledger_text = order_description(svc, quote)  # the ledger keeps the kind id (as wallet.debit's callers)
    return await repo.record_order(
        session,
        {
            "customer_id": svc.customer_id,
            "service_id": svc.service_id,
            "description": description[:500],
            "status": "paid" if due_cents == 0 else "open",
            "total_cents": sum(line.amount_cents for line in lines),
            "method": payment_method(wallet_cents, due_cents, checkout_method),
            "deposit_id": deposit_id if due_cents else None,
            "now": now,
            "paid_at": now if due_cents == 0 else None,
            "l_desc": [line.description[:300] for line in lines],
            "l_qty": [line.quantity for line in lines],
            "l_unit": [line.unit_price_cents for line in lines],
            "l_amount": [line.amount_cents for line in lines],
            "e_amount": -wallet_cents,
            "e_balance": balance_after_cents,
            "e_description": ledger_text[:500],
            "e_now": utcnow(),
            "ev_id": [uuid.uuid4() for _ in events],
            "ev_type": [event_type for event_type, _, _ in events],
            "ev_data": [json.dumps(data) for _, data, _ in events],
            "ev_at": [at for _, _, at in events],
        },
        wallet_cents,
    )


async def record(
    session: AsyncSession,
    ctx: OrderContext,
    svc: Service,
    quote: Quote,
    taken: wallet.Withdrawal | None,
    due: int,
    payment_method: str,
) -> None:
    """The invoice, the ledger entry of the wallet part and the events of an order not written by
    paid_in_full. PostgreSQL, customer without enabled webhook endpoints: one statement
    (record_order_pg); else the separate writes (SQLite, or deliveries to queue)."""
    paid = taken.cents if taken else 0
    if repo.available(session) and not ctx.has_webhooks:
        events: list[tuple[str, dict[str, Any], datetime]] = []
        if taken is not None and taken.cents > 0:
            if ctx.capped_key:
                await caps.charge(session, taken.cents)
            low = ctx.balance_low_threshold_cents
            if low is not None and taken.balance_after_cents + taken.cents >= low > taken.balance_after_cents:
                data = {"balance_cents": taken.balance_after_cents, "threshold_cents": low}
                events.append(("wallet.balance_low", data, utcnow()))
        events += [(kind, data, utcnow()) for kind, data in service_events.order_items(svc, due)]
        await record_order_pg(
            session,
            svc,
            quote,
            paid,
            taken.balance_after_cents if taken else 0,
            due,
            payment_method,
            svc.deposit_id,
            events,
        )
        return
    invoice_id = await order_invoice.record_order(
        session, svc, quote, paid, due, payment_method, svc.deposit_id
    )
    if taken is not None:
        await wallet.record_withdrawal(
            session,
            svc.customer_id,
            taken,
            "purchase",
            order_description(svc, quote),
            service_id=svc.service_id,
            invoice_id=str(invoice_id),
            capped_key=ctx.capped_key,
            balance_low_threshold=(ctx.balance_low_threshold_cents,),
        )
    await service_events.order_placed(session, svc, due, has_endpoints=ctx.has_webhooks)
