"""The order's writes of `invoices` and `invoice_items` (issue 31): the plain form (prebuilt Core INSERTs
run as driver statements, moved from domains/invoices/orders.py, which builds the values) and the
fragments of the lean PostgreSQL order statements (storage/repos/orders.py). Other invoices (charges,
refunds, top-ups) are still written by domains/invoices/service.py (listed in tests/test_storage_rules.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

from sqlalchemy import Table, bindparam, func, insert, select
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.storage.driver import DriverStatement
from proxyplane.storage.models.billing import Invoice, InvoiceItem
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
