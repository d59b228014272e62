"""Invoices: every charge (order, renewal, add-IPs, add-on, paid refresh, catalog purchase, traffic) and
every top-up produces an invoice with lines; refunds produce credit notes against the service's invoices.

Other domains call, in their own transaction:
    record_charge(session, customer_id, kind=..., description=..., lines=[Line(...)], service_id=...)
    record_refund(session, customer_id, service_id, amount_cents, description)
    settle_deposit_invoice(session, deposit_id, paid=True|False)   (order paid at a checkout)
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.core.clock import utcnow
from proxyplane.core.errors import NotFound
from proxyplane.core.product_names import humanize
from proxyplane.core.product_names import months as months_text
from proxyplane.domains.accounts.billing import BillingDetails, get_billing
from proxyplane.domains.invoices.pdf import (
    CreditNote,
    InvoiceDocument,
    InvoiceLine,
    Party,
    render_invoice_pdf,
)
from proxyplane.domains.pricing import Quote, QuoteLine
from proxyplane.storage import paging
from proxyplane.storage.models import Customer, Deposit, LedgerEntry, Service
from proxyplane.storage.models.billing import Invoice, InvoiceCreditNote, InvoiceItem
from proxyplane.storage.repos import invoices as invoice_rows

KINDS = ("order", "renewal", "add_ips", "addon", "refresh", "deposit", "catalog", "traffic")
# invoice status -> the legacy API's wording
LEGACY_STATUS = {
    "open": "Unpaid",
    "paid": "Paid",
    "partially_refunded": "Partially Refunded",
    "refunded": "Refunded",
    "void": "Cancelled",
}


@dataclass(frozen=True)
class Line:
    description: str
    quantity: int
    unit_price_cents: int
    amount_cents: int


def invoice_number(invoice_id: int) -> str:
    return f"INV-{invoice_id:06d}"


def credit_note_number(note_id: int) -> str:
    return f"CN-{note_id:06d}"


async def record_charge(
    session: AsyncSession,
    customer_id: int,
    *,
    kind: str,
    description: str,
    lines: Sequence[Line],
    service_id: uuid.UUID | None = None,
    payment_method: str = "wallet",
    status: str = "paid",
    deposit_id: uuid.UUID | None = None,
    ledger_entries: Sequence[LedgerEntry | None] = (),
    now: datetime | None = None,
) -> Invoice:
    """Write one invoice with its lines (total = sum of the lines) and link the ledger entries to it."""
    if kind not in KINDS:
        raise ValueError(f"unknown invoice kind {kind!r}")
    now = now or utcnow()
    values = {
        "customer_id": customer_id,
        "service_id": service_id,
        "kind": kind,
        "description": description[:500],
        "status": status,
        "total_cents": sum(line.amount_cents for line in lines),
        "refunded_cents": 0,
        "payment_method": payment_method,
        "deposit_id": deposit_id,
        "created_at": now,
        "paid_at": now if status == "paid" else None,
    }
    rows = [
        {
            "description": line.description[:300],
            "quantity": line.quantity,
            "unit_price_cents": line.unit_price_cents,
            "amount_cents": line.amount_cents,
        }
        for line in lines
    ]
    # the billing details are copied inside the INSERT (storage/repos/invoices.add_invoice)
    invoice = await invoice_rows.add_invoice(session, values, rows)
    for entry in ledger_entries:
        if entry is not None:
            entry.invoice_id = str(invoice.id)
    await session.flush()
    return invoice


async def record_refund(
    session: AsyncSession,
    customer_id: int,
    service_id: uuid.UUID | None,
    amount_cents: int,
    description: str,
    *,
    invoice_id: int | None = None,
    ledger_entry: LedgerEntry | None = None,
    now: datetime | None = None,
) -> list[InvoiceCreditNote]:
    """Credit `amount_cents` back against the given invoice, or against the service's paid invoices,
    newest first (each takes at most what is left of it). Updates each invoice's status."""
    if amount_cents <= 0:
        return []
    now = now or utcnow()
    q = select(Invoice).where(
        Invoice.customer_id == customer_id,
        Invoice.status.in_(("paid", "partially_refunded")),
        Invoice.kind != "deposit",
    )
    if invoice_id is None:  # an add-on's refund names its own invoice; service refunds skip those
        q = q.where(Invoice.kind.not_in(("addon", "traffic")))  # and traffic bought (used, not refunded)
    q = (
        q.where(Invoice.id == invoice_id)
        if invoice_id is not None
        else q.where(Invoice.service_id == service_id)
    )
    candidates = (await session.execute(q.order_by(Invoice.id.desc()))).scalars().all()
    left = amount_cents
    notes: list[InvoiceCreditNote] = []
    for inv in candidates:
        room = inv.total_cents - inv.refunded_cents
        take = min(room, left)
        if take <= 0:
            continue
        notes.append(invoice_rows.add_credit_note(session, inv.id, description[:300], take, now))
        inv.refunded_cents += take
        inv.status = "refunded" if inv.refunded_cents >= inv.total_cents else "partially_refunded"
        left -= take
        if left == 0:
            break
    await session.flush()
    if ledger_entry is not None and notes:
        ledger_entry.invoice_id = str(notes[0].invoice_id)
    return notes


async def settle_deposit_invoice(session: AsyncSession, deposit_id: uuid.UUID, paid: bool) -> Invoice | None:
    """The checkout of an open (order) invoice succeeded (-> paid) or failed (-> void)."""
    invoice = (
        await session.execute(
            select(Invoice).where(Invoice.deposit_id == deposit_id, Invoice.status == "open")
        )
    ).scalar_one_or_none()
    if invoice is not None:
        invoice.status = "paid" if paid else "void"
        invoice.paid_at = utcnow() if paid else None
        await session.flush()
    return invoice


# --- reading ------------------------------------------------------------------------------------


async def get_owned(session: AsyncSession, customer_id: int, invoice_id: str | int) -> Invoice:
    """The customer's invoice by numeric id ("123" or "INV-000123"); NotFound for others' or unknown."""
    text = str(invoice_id).strip().upper().removeprefix("INV-")
    invoice = await session.get(Invoice, int(text)) if text.isdigit() and len(text) < 10 else None
    if invoice is None or invoice.customer_id != customer_id:
        raise NotFound(f"invoice {invoice_id} not found")
    return invoice


async def list_for_customer(
    session: AsyncSession,
    customer_id: int,
    offset: int,
    limit: int,
    service_id: uuid.UUID | None = None,
) -> tuple[list[Invoice], int]:
    cond = [Invoice.customer_id == customer_id]
    if service_id is not None:
        cond.append(Invoice.service_id == service_id)
    return await paging.page(session, Invoice, Invoice.id, cond, offset, limit)


async def items(session: AsyncSession, invoice_id: int) -> list[InvoiceItem]:
    rows = await session.execute(
        select(InvoiceItem).where(InvoiceItem.invoice_id == invoice_id).order_by(InvoiceItem.id)
    )
    return list(rows.scalars())


async def credit_notes(session: AsyncSession, invoice_id: int) -> list[InvoiceCreditNote]:
    rows = await session.execute(
        select(InvoiceCreditNote)
        .where(InvoiceCreditNote.invoice_id == invoice_id)
        .order_by(InvoiceCreditNote.id)
    )
    return list(rows.scalars())


DEMO_SELLER = {
    "name": "ProxyPlane Demo Ltd",
    "address": "1 Example Street|Demo City 00000|Exampleland",
    "email": "billing@example.com",
    "tax_id": "XX000000000",
}


def seller() -> Party:
    """The operator's details printed on invoices (PROXYPLANE_SELLER_NAME, _ADDRESS with `|` between
    lines, _EMAIL, _TAX_ID)."""
    # unset: the demo's values (README), so the block is never a bare name; "" leaves one out
    address = os.environ.get("PROXYPLANE_SELLER_ADDRESS", DEMO_SELLER["address"])
    return Party(
        name=os.environ.get("PROXYPLANE_SELLER_NAME") or DEMO_SELLER["name"],
        address_lines=tuple(p.strip() for p in address.split("|") if p.strip()),
        email=os.environ.get("PROXYPLANE_SELLER_EMAIL", DEMO_SELLER["email"]) or None,
        tax_id=os.environ.get("PROXYPLANE_SELLER_TAX_ID", DEMO_SELLER["tax_id"]) or None,
    )


async def document(session: AsyncSession, invoice: Invoice) -> InvoiceDocument:
    customer = await session.get(Customer, invoice.customer_id)
    assert customer is not None
    billing = (  # the copy made at issue; invoices issued before 0016d show the current details
        BillingDetails(invoice.billing_company, invoice.billing_address or "", invoice.billing_vat_id or "")
        if invoice.billing_company is not None
        else await get_billing(session, customer.id)
    )
    person = customer.name or customer.email
    buyer = Party(  # the billing details when entered (issue 22.8), else the account's name
        name=billing.company or person,
        address_lines=((f"Attn. {person}",) if billing.company else ())
        + billing.address_lines
        + (f"Customer #{customer.id}",)
        + ((customer.phone,) if customer.phone else ()),
        email=customer.email,
        tax_id=billing.vat_id or None,
    )
    notes = await credit_notes(session, invoice.id)
    return InvoiceDocument(
        number=invoice_number(invoice.id),
        issued_on=invoice.created_at.date(),
        status=invoice.status,
        seller=seller(),
        buyer=buyer,
        lines=tuple(
            InvoiceLine(humanize(i.description), i.quantity, i.unit_price_cents, i.amount_cents)
            for i in await items(session, invoice.id)
        ),
        credit_notes=tuple(
            CreditNote(credit_note_number(n.id), n.created_at.date(), humanize(n.description), n.amount_cents)
            for n in notes
        ),
        due_on=invoice.created_at.date(),
        paid_on=invoice.paid_at.date() if invoice.paid_at else None,
        reference=f"service {invoice.service_id}" if invoice.service_id else None,
        notes=(f"{humanize(invoice.description)}. Paid with: {invoice.payment_method}.",),
    )


async def render_pdf(session: AsyncSession, customer_id: int, invoice_id: str | int) -> tuple[Invoice, bytes]:
    invoice = await get_owned(session, customer_id, invoice_id)
    return invoice, render_invoice_pdf(await document(session, invoice))


def _place(line: QuoteLine) -> str:
    """`DE`, or a placed segment's `DE (region bavaria, city munich)` (issue 36)."""
    parts = [f"{name} {value}" for name, value in (("region", line.region), ("city", line.city)) if value]
    return f"{line.country} ({', '.join(parts)})" if parts else line.country


def quote_invoice_lines(quote: Quote) -> list[Line]:
    """Invoice lines of a priced quote: one per segment at the volume-tier price for the whole term, then
    the partner and term discounts as negative lines. Their sum is exactly `quote.total_cents`."""
    months = quote.period_months
    lines = [
        Line(
            humanize(f"{line.count} {quote.product_kind} IPs in {_place(line)}, {months_text(months)}"),
            line.count,
            line.unit_price_cents * months,
            line.retail_monthly_cents * months,
        )
        for line in quote.lines
    ]
    partner = quote.partner_discount_monthly_cents * months
    if partner:
        lines.append(Line(f"Partner discount ({quote.partner_discount_percent} %)", 1, -partner, -partner))
    if quote.term_discount_cents:
        term = quote.term_discount_cents
        lines.append(
            Line(f"Term discount {months} months ({quote.term_discount_percent} %)", 1, -term, -term)
        )
    return lines


async def on_deposit_settled(session: AsyncSession, deposit: Deposit) -> None:
    """Deposit-settlement hook: an order's checkout settles its open invoice; any other paid deposit is a
    top-up and gets its own invoice."""
    order_invoice = await settle_deposit_invoice(session, deposit.id, deposit.status == "paid")
    if order_invoice is not None or deposit.status != "paid":
        return None
    linked = await session.scalar(
        select(func.count()).where(Service.deposit_id == deposit.id, Service.status != "cancelled")
    )
    if linked:  # a late payment of a cancelled (expired) order's checkout is a top-up of the wallet
        return None
    await record_charge(
        session,
        deposit.customer_id,
        kind="deposit",
        description="Wallet top-up",
        lines=[
            Line(f"Wallet top-up via {deposit.payment_method}", 1, deposit.amount_cents, deposit.amount_cents)
        ],
        payment_method=deposit.payment_method,
        deposit_id=deposit.id,
    )
    return None
