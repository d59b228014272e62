"""Fragments of the lean PostgreSQL order statements that write `invoices` and `invoice_items`
(storage/repos/orders.py). The plain writer of both is still domains/invoices/ (issue 31: allow-listed in
tests/test_architecture.py until it moves here)."""

from __future__ import annotations

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
