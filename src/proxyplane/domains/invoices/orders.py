"""The invoice of a composite order, written with prebuilt Core INSERTs (the order path runs it on every
order; the ORM flush of an Invoice object and a statement rebuilt per call cost more CPU than the rest
of the invoice). Same rows as `service.record_charge(kind="order")`: the billing details copied inside
the invoice INSERT (no extra read), one executemany of the lines."""

from __future__ import annotations

import uuid
from typing import Any, cast

from sqlalchemy import Table, bindparam, func, insert, select
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.core.clock import utcnow
from proxyplane.core.product_names import humanize, months
from proxyplane.domains.invoices.service import quote_invoice_lines
from proxyplane.domains.pricing import Quote
from proxyplane.storage.driver import DriverStatement
from proxyplane.storage.models import Service
from proxyplane.storage.models.billing import Invoice, InvoiceItem
from proxyplane.storage.models.billing_details import CustomerBillingDetails


def _copy(column: Any) -> Any:
    """The customer's billing field as of the INSERT ("" when none entered)."""
    value = select(column).where(CustomerBillingDetails.customer_id == bindparam("copy_customer_id"))
    return func.coalesce(value.scalar_subquery(), "")


_INVOICES = cast(Table, Invoice.__table__)
# run on the driver connection (storage/driver.py)
_INSERT_INVOICE = DriverStatement(
    insert(_INVOICES)
    .values(
        billing_company=_copy(CustomerBillingDetails.company),
        billing_address=_copy(CustomerBillingDetails.address),
        billing_vat_id=_copy(CustomerBillingDetails.vat_id),
    )
    .returning(_INVOICES.c.id)
)
_INSERT_LINES = DriverStatement(insert(cast(Table, InvoiceItem.__table__)))


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
    invoice_id = await _INSERT_INVOICE.scalar(
        session,
        {
            "copy_customer_id": svc.customer_id,
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
    if lines:  # one executemany, whatever the line count
        await _INSERT_LINES.many(
            session,
            [
                {
                    "invoice_id": invoice_id,
                    "description": line.description[:300],
                    "quantity": line.quantity,
                    "unit_price_cents": line.unit_price_cents,
                    "amount_cents": line.amount_cents,
                }
                for line in lines
            ],
        )
    return int(invoice_id)
