"""The writer of `invoices`, `invoice_items` and `invoice_credit_notes` (issue 31). An order's invoice:
the plain form (prebuilt Core INSERTs run as driver statements, moved from domains/invoices/orders.py,
which builds the values) and the fragments of the lean PostgreSQL order statements
(storage/repos/orders.py). Other charges, top-ups and refunds: `add_invoice`, `add_credit_note`
(domains/invoices/service.py says what they hold). Nothing here commits; the status and refunded amount of
a loaded invoice are the unit of work's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, cast

from sqlalchemy import Table, bindparam, func, insert, select
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.storage.driver import DriverStatement
from proxyplane.storage.models.billing import Invoice, InvoiceCreditNote, InvoiceItem
from proxyplane.storage.models.billing_details import CustomerBillingDetails


def _copy(column: Any) -> Any:
    """The customer's billing field as of the INSERT ("" when none entered)."""
    value = select(column).where(CustomerBillingDetails.customer_id == bindparam("copy_customer_id"))
    return func.coalesce(value.scalar_subquery(), "")


_INVOICES = cast(Table, Invoice.__table__)
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


async def insert_invoice(session: AsyncSession, values: Mapping[str, Any]) -> int:
    """An invoice row with `values` (customer_id .. paid_at) and the customer's billing details copied
    inside the INSERT (no extra read); its id."""
    return int(await _INSERT_INVOICE.scalar(session, {"copy_customer_id": values["customer_id"], **values}))


async def insert_lines(session: AsyncSession, invoice_id: int, lines: Sequence[Mapping[str, Any]]) -> None:
    """The invoice's lines (description, quantity, unit_price_cents, amount_cents) in one executemany."""
    if lines:
        await _INSERT_LINES.many(session, [{"invoice_id": invoice_id, **line} for line in lines])


def _billing_copy(customer_id: int, column: Any) -> Any:
    """The customer's billing field as of the INSERT ("" when none entered), for an ORM Invoice."""
    value = select(column).where(CustomerBillingDetails.customer_id == customer_id).scalar_subquery()
    return func.coalesce(value, "")


async def add_invoice(
    session: AsyncSession, values: Mapping[str, Any], lines: Sequence[Mapping[str, Any]]
) -> Invoice:
    """An invoice through the ORM with `values` (customer_id .. paid_at) and the customer's billing
    details copied inside the INSERT (a legal document keeps the details it was issued with; no extra
    read), flushed (its id is known); then its lines (description, quantity, unit_price_cents,
    amount_cents) in one executemany, whatever their count."""
    customer_id = values["customer_id"]
    invoice = Invoice(
        **values,
        billing_company=_billing_copy(customer_id, CustomerBillingDetails.company),
        billing_address=_billing_copy(customer_id, CustomerBillingDetails.address),
        billing_vat_id=_billing_copy(customer_id, CustomerBillingDetails.vat_id),
    )
    session.add(invoice)
    await session.flush()
    if lines:
        await session.execute(insert(InvoiceItem), [{"invoice_id": invoice.id, **line} for line in lines])
    return invoice


def add_credit_note(
    session: AsyncSession, invoice_id: int, description: str, amount_cents: int, now: datetime
) -> InvoiceCreditNote:
    """A credit note against the invoice, added to the session (flushed with the caller's next flush)."""
    note = InvoiceCreditNote(
        invoice_id=invoice_id, description=description, amount_cents=amount_cents, created_at=now
    )
    session.add(note)
    return note


_COLUMNS = (
    "customer_id, service_id, kind, description, status, total_cents, refunded_cents, payment_method,"
    " deposit_id, created_at, paid_at, billing_company, billing_address, billing_vat_id"
)


def invoice_cte(values: str, sources: str, customer_id: str) -> str:
    """CTE `inv` (RETURNING id): an invoice with `values` (SQL expressions, customer_id .. paid_at) and the
    customer's billing details as they are now, FROM `sources`."""
    return (
        f"inv AS (INSERT INTO invoices ({_COLUMNS}) SELECT {values},"
        " COALESCE(b.company, ''), COALESCE(b.address, ''), COALESCE(b.vat_id, '')"
        f" FROM {sources} LEFT JOIN customer_billing_details AS b ON b.customer_id = {customer_id}"
        " RETURNING id)"
    )


# CTE `items`: the invoice's lines from four arrays (:l_desc, :l_qty, :l_unit, :l_amount), in order
ITEMS_CTE = (
    "items AS (INSERT INTO invoice_items (invoice_id, description, quantity, unit_price_cents, amount_cents)"
    " SELECT inv.id, l.d, l.q, l.u, l.a FROM inv, unnest(CAST(:l_desc AS VARCHAR[]),"
    " CAST(:l_qty AS INTEGER[]), CAST(:l_unit AS BIGINT[]), CAST(:l_amount AS BIGINT[]))"
    " WITH ORDINALITY AS l(d, q, u, a, n) ORDER BY l.n)"
)
