"""The invoice of a composite order, written with prebuilt Core INSERTs (storage/repos/invoices.py: the
order path runs it on every order; the ORM flush of an Invoice object and a statement rebuilt per call
cost more CPU than the rest of the invoice). Same rows as `service.record_charge(kind="order")`: the
billing details copied inside the invoice INSERT (no extra read), one executemany of the lines."""

from __future__ import annotations

import uuid

from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.core.clock import utcnow
from proxyplane.core.product_names import humanize, months
from proxyplane.domains.invoices.service import quote_invoice_lines
from proxyplane.domains.pricing import Quote
from proxyplane.storage.models import Service
from proxyplane.storage.repos import invoices as invoice_rows


async def record_order(
    session: AsyncSession,
    svc: Service,
    quote: Quote,
    wallet_cents: int,
    due_cents: int,
    checkout_method: str,
    deposit_id: uuid.UUID | None,
) -> int:
    """The invoice of a composite order: paid when the wallet covered it, else open until its checkout
    settles (service.settle_deposit_invoice). Returns its id; the caller writes the order's wallet debit
    with it (as orders.place_order does), so no ledger entry needs linking here."""
    if due_cents == 0:
        method = "wallet"
    else:
        method = f"wallet + {checkout_method}" if wallet_cents else checkout_method
    now = utcnow()
    lines = quote_invoice_lines(quote)
    description = humanize(
        f"Order #{svc.number}: {quote.ip_count} {quote.product_kind} IPs, {months(quote.period_months)}"
    )
    invoice_id = await invoice_rows.insert_invoice(
        session,
        {
            "customer_id": svc.customer_id,
            "service_id": svc.service_id,
            "kind": "order",
            "description": description[:500],
            "status": "paid" if due_cents == 0 else "open",
            "total_cents": sum(line.amount_cents for line in lines),
            "refunded_cents": 0,
            "payment_method": method,
            "deposit_id": deposit_id if due_cents else None,
            "created_at": now,
            "paid_at": now if due_cents == 0 else None,
        },
    )
    await invoice_rows.insert_lines(  # one executemany, whatever the line count
        session,
        invoice_id,
        [
            {
                "description": line.description[:300],
                "quantity": line.quantity,
                "unit_price_cents": line.unit_price_cents,
                "amount_cents": line.amount_cents,
            }
            for line in lines
        ],
    )
    return invoice_id
