"""billing/invoices and billing/invoice/{id}: the invoices domain's records in the legacy shape.

Invoice: {"id", "description", "status", "created_at", "amount", "date_refunded", "date_paid",
"paymentmethod", "serviceid"}; oldest first (old clients reverse the list to find their newest service);
`serviceid` is the numeric service id, null for invoices not tied to a service (top-ups)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel
from sqlalchemy import select

from proxyplane.core.errors import NotFound
from proxyplane.core.scopes import Scope
from proxyplane.domains.invoices import service as invoices
from proxyplane.domains.legacy.wire import Money, date, fail
from proxyplane.ops import LEGACY, Context, Effect, Operation
from proxyplane.storage.models import Service
from proxyplane.storage.models.billing import Invoice

# v1 invoice status -> legacy; a partly refunded invoice stays "Paid" (the legacy set has no such state;
# the refund shows in date_refunded)
STATUS = {
    "open": "Unpaid",
    "paid": "Paid",
    "partially_refunded": "Paid",
    "refunded": "Refunded",
    "void": "Cancelled",
}
PAGE = 500


class InvoiceRef(BaseModel):
    id: str = ""


async def _numbers(ctx: Context, rows: list[Invoice]) -> dict[Any, int]:
    ids = {r.service_id for r in rows if r.service_id is not None}
    if not ids:
        return {}
    found = await ctx.session.execute(
        select(Service.service_id, Service.number).where(Service.service_id.in_(ids))
    )
    return dict(found.tuples().all())


async def _legacy(ctx: Context, rows: list[Invoice]) -> list[dict[str, Any]]:
    numbers = await _numbers(ctx, rows)
    out = []
    for inv in rows:
        notes = await invoices.credit_notes(ctx.session, inv.id)
        out.append(
            {
                "id": inv.id,
                "description": inv.description,
                "status": STATUS.get(inv.status, "Pending"),
                "created_at": date(inv.created_at),
                "amount": Money(inv.total_cents),
                "date_refunded": date(max(n.created_at for n in notes)) if notes else None,
                "date_paid": date(inv.paid_at),
                "paymentmethod": inv.payment_method,
                "serviceid": numbers.get(inv.service_id),
            }
        )
    return out


async def list_invoices(ctx: Context, _: InvoiceRef) -> list[dict[str, Any]]:
    rows: list[Invoice] = []
    while True:
        page, total = await invoices.list_for_customer(ctx.session, ctx.customer_id, len(rows), PAGE)
        rows.extend(page)
        if not page or len(rows) >= total:
            break
    return await _legacy(ctx, sorted(rows, key=lambda r: r.id))


async def get_invoice(ctx: Context, ref: InvoiceRef) -> list[dict[str, Any]]:
    if not ref.id.isascii() or not ref.id.isdigit():
        raise fail()
    try:
        invoice = await invoices.get_owned(ctx.session, ctx.customer_id, ref.id)
    except NotFound:
        raise fail() from None
    return await _legacy(ctx, [invoice])


async def latest_invoice_id(ctx: Context, svc: Service) -> int:
    """The newest invoice of a service (0 when the purchase produced none)."""
    rows, _ = await invoices.list_for_customer(ctx.session, ctx.customer_id, 0, 1, service_id=svc.service_id)
    return rows[0].id if rows else 0


def _op(name: str, handler: Any) -> Operation:
    return Operation(
        name=f"legacy_{name}",
        doors=LEGACY,
        summary=f"legacy API: {name}",
        method="GET",
        path=f"/api/billing/{name}",
        handler=handler,
        input=InvoiceRef,
        scopes=frozenset({Scope.wallet_read}),
        effect=Effect.READ,
        mcp=False,
    )


INVOICES = _op("invoices", list_invoices)
INVOICE = _op("invoice", get_invoice)
