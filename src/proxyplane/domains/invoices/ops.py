"""Operations: list invoices, one invoice, its PDF."""

from __future__ import annotations

import base64
import uuid
from datetime import datetime

from pydantic import BaseModel, Field
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.core.bounds import INT32_MAX, documented
from proxyplane.core.product_names import humanize
from proxyplane.core.scopes import Scope
from proxyplane.domains.invoices import service as invoices
from proxyplane.domains.wallet.deposits import on_deposit_settled
from proxyplane.ops import Context, Operation, register
from proxyplane.storage.models.billing import Invoice

on_deposit_settled(invoices.on_deposit_settled)


class InvoiceLineOut(BaseModel):
    description: str
    quantity: int
    unit_price_cents: int
    amount_cents: int


class CreditNoteOut(BaseModel):
    credit_note_id: int
    number: str
    description: str
    amount_cents: int
    created_at: datetime


class InvoiceOut(BaseModel):
    invoice_id: str = Field(description="numeric invoice id, as a string (path parameter of the PDF)")
    number: str = Field(description="printed number, INV-000123")
    service_id: uuid.UUID | None
    kind: str = Field(
        description="order, renewal, add_ips, addon, refresh, deposit, catalog or traffic",
        json_schema_extra=documented(
            enum=["order", "renewal", "add_ips", "addon", "refresh", "deposit", "catalog", "traffic"]
        ),
    )
    description: str
    status: str = Field(
        description="open, paid, partially_refunded, refunded or void",
        json_schema_extra=documented(enum=["open", "paid", "partially_refunded", "refunded", "void"]),
    )
    legacy_status: str = Field(
        description="Unpaid, Paid, Partially Refunded, Refunded or Cancelled",
        json_schema_extra=documented(enum=["Unpaid", "Paid", "Partially Refunded", "Refunded", "Cancelled"]),
    )
    currency: str = "USD"
    total_cents: int
    refunded_cents: int
    net_cents: int
    payment_method: str
    created_at: datetime
    paid_at: datetime | None
    lines: list[InvoiceLineOut]
    credit_notes: list[CreditNoteOut]
    pdf_path: str


class InvoiceQuery(BaseModel):
    offset: int = Field(default=0, ge=0, le=INT32_MAX)
    limit: int = Field(default=50, ge=1, le=200)
    service_id: uuid.UUID | None = Field(default=None, description="only this service's invoices")


class InvoicePage(BaseModel):
    items: list[InvoiceOut]
    offset: int
    limit: int
    total: int


class InvoiceRef(BaseModel):
    invoice_id: str = Field(min_length=1, max_length=20)


class InvoicePdf(BaseModel):
    invoice_id: str
    filename: str
    content_type: str = "application/pdf"
    content_base64: str = Field(description="the PDF, base64 (REST serves the raw bytes)")


async def invoice_out(session: AsyncSession, inv: Invoice) -> InvoiceOut:
    return InvoiceOut(
        invoice_id=str(inv.id),
        number=invoices.invoice_number(inv.id),
        service_id=inv.service_id,
        kind=inv.kind,
        description=humanize(inv.description),
        status=inv.status,
        legacy_status=invoices.LEGACY_STATUS.get(inv.status, inv.status.title()),
        total_cents=inv.total_cents,
        refunded_cents=inv.refunded_cents,
        net_cents=inv.total_cents - inv.refunded_cents,
        payment_method=inv.payment_method,
        created_at=inv.created_at,
        paid_at=inv.paid_at,
        lines=[
            InvoiceLineOut(
                description=humanize(i.description),
                quantity=i.quantity,
                unit_price_cents=i.unit_price_cents,
                amount_cents=i.amount_cents,
            )
            for i in await invoices.items(session, inv.id)
        ],
        credit_notes=[
            CreditNoteOut(
                credit_note_id=n.id,
                number=invoices.credit_note_number(n.id),
                description=humanize(n.description),
                amount_cents=n.amount_cents,
                created_at=n.created_at,
            )
            for n in await invoices.credit_notes(session, inv.id)
        ],
        pdf_path=f"/api/v1/customer/invoices/{inv.id}/pdf",
    )


async def list_invoices(ctx: Context, q: InvoiceQuery) -> InvoicePage:
    rows, total = await invoices.list_for_customer(
        ctx.session, ctx.customer_id, q.offset, q.limit, q.service_id
    )
    return InvoicePage(
        items=[await invoice_out(ctx.session, r) for r in rows], offset=q.offset, limit=q.limit, total=total
    )


async def get_invoice(ctx: Context, data: InvoiceRef) -> InvoiceOut:
    return await invoice_out(
        ctx.session, await invoices.get_owned(ctx.session, ctx.customer_id, data.invoice_id)
    )


async def get_invoice_pdf(ctx: Context, data: InvoiceRef) -> InvoicePdf:
    inv, pdf = await invoices.render_pdf(ctx.session, ctx.customer_id, data.invoice_id)
    return InvoicePdf(
        invoice_id=str(inv.id),
        filename=f"{invoices.invoice_number(inv.id)}.pdf",
        content_base64=base64.b64encode(pdf).decode("ascii"),
    )


LIST = Operation(
    name="list_invoices",
    summary="Your invoices, newest first: lines, totals, status, credit notes.",
    method="GET",
    path="/customer/invoices",
    handler=list_invoices,
    input=InvoiceQuery,
    output=InvoicePage,
    scopes=frozenset({Scope.wallet_read}),
    tags=("invoices",),
)
GET = Operation(
    name="get_invoice",
    summary="One invoice with its lines and credit notes.",
    method="GET",
    path="/customer/invoices/{invoice_id}",
    handler=get_invoice,
    input=InvoiceRef,
    output=InvoiceOut,
    scopes=frozenset({Scope.wallet_read}),
    tags=("invoices",),
)
PDF = Operation(
    name="get_invoice_pdf",
    summary="The invoice as a PDF (REST: application/pdf bytes; MCP: base64).",
    method="GET",
    path="/customer/invoices/{invoice_id}/pdf",
    handler=get_invoice_pdf,
    input=InvoiceRef,
    output=InvoicePdf,
    scopes=frozenset({Scope.wallet_read}),
    tags=("invoices",),
    extra={"binary": ("content_base64", "content_type", "filename")},
)
register(LIST, GET, PDF)
