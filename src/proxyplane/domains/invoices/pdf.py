"""Invoice PDF rendering with reportlab platypus. Pure: an `InvoiceDocument` in, PDF bytes out.

Text uses the vendored DejaVu Sans (Latin, umlauts, Cyrillic, €, ×), registered once per process.
"""

from __future__ import annotations

import io
import threading
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from xml.sax.saxutils import escape

from reportlab.lib import colors
from reportlab.lib.enums import TA_RIGHT
from reportlab.lib.pagesizes import A4
from reportlab.lib.styles import ParagraphStyle
from reportlab.lib.units import mm
from reportlab.pdfbase import pdfmetrics
from reportlab.pdfbase.ttfonts import TTFont
from reportlab.pdfgen.canvas import Canvas
from reportlab.platypus import Flowable, HRFlowable, Paragraph, SimpleDocTemplate, Spacer, Table, TableStyle

from proxyplane.domains.pricing.money import format_usd

FONT_DIR = Path(__file__).parent / "fonts"
FONT = "DejaVuSans"
FONT_BOLD = "DejaVuSans-Bold"

_font_lock = threading.Lock()
_fonts_registered = False


@dataclass(frozen=True)
class Party:
    name: str
    address_lines: tuple[str, ...] = ()
    email: str | None = None
    tax_id: str | None = None  # VAT / tax number, printed when present


@dataclass(frozen=True)
class InvoiceLine:
    description: str
    quantity: int
    unit_price_cents: int
    amount_cents: int  # negative for a discount line
    refunded_cents: int = 0  # part of this line refunded (shown under the description)


@dataclass(frozen=True)
class CreditNote:
    number: str
    issued_on: date
    description: str
    amount_cents: int  # positive: the amount credited back to the customer


@dataclass(frozen=True)
class InvoiceDocument:
    number: str
    issued_on: date
    status: str  # e.g. "paid", "open", "void", "refunded", "partially_refunded"
    seller: Party
    buyer: Party
    lines: tuple[InvoiceLine, ...]
    credit_notes: tuple[CreditNote, ...] = ()
    due_on: date | None = None
    paid_on: date | None = None
    reference: str | None = None  # e.g. the service id the invoice is for
    notes: tuple[str, ...] = ()
    currency: str = "USD"

    @property
    def total_cents(self) -> int:
        return sum(line.amount_cents for line in self.lines)

    @property
    def credited_cents(self) -> int:
        return sum(note.amount_cents for note in self.credit_notes)

    @property
    def net_cents(self) -> int:
        return self.total_cents - self.credited_cents


def register_fonts() -> None:
    """Register DejaVu Sans (regular and bold) with reportlab; does the work once per process."""
    global _fonts_registered
    with _font_lock:
        if _fonts_registered:
            return
        pdfmetrics.registerFont(TTFont(FONT, str(FONT_DIR / "DejaVuSans.ttf")))
        pdfmetrics.registerFont(TTFont(FONT_BOLD, str(FONT_DIR / "DejaVuSans-Bold.ttf")))
        pdfmetrics.registerFontFamily(FONT, normal=FONT, bold=FONT_BOLD, italic=FONT, boldItalic=FONT_BOLD)
        _fonts_registered = True


INK = colors.HexColor("#1f2933")
MUTED = colors.HexColor("#6b7785")
RULE = colors.HexColor("#d5dbe1")
BAND = colors.HexColor("#f1f4f7")
STATUS_COLORS = {
    "paid": colors.HexColor("#1e8e3e"),
    "open": colors.HexColor("#c26401"),
    "void": colors.HexColor("#6b7785"),
    "refunded": colors.HexColor("#c5221f"),
    "partially_refunded": colors.HexColor("#c5221f"),
}


def _style(
    name: str, size: float = 9, *, bold: bool = False, color: colors.Color = INK, **kw: object
) -> ParagraphStyle:
    return ParagraphStyle(
        name, fontName=FONT_BOLD if bold else FONT, fontSize=size, leading=size * 1.35, textColor=color, **kw
    )


BODY = _style("body")
SMALL = _style("small", 7.5, color=MUTED)
NOTE = _style("note", 7.5, color=MUTED, leftIndent=6)
LABEL = _style("label", 7.5, bold=True, color=MUTED)
TITLE = _style("title", 20, bold=True, alignment=TA_RIGHT)
SELLER = _style("seller", 14, bold=True)
RIGHT = _style("right", alignment=TA_RIGHT)
RIGHT_BOLD = _style("right_bold", bold=True, alignment=TA_RIGHT)
TH = _style("th", 8, bold=True, color=MUTED)
TH_RIGHT = _style("th_right", 8, bold=True, color=MUTED, alignment=TA_RIGHT)


def _money(cents: int, currency: str) -> str:
    if currency == "USD":
        return format_usd(cents)
    sign = "-" if cents < 0 else ""
    whole, frac = divmod(abs(cents), 100)
    return f"{sign}{whole:,}.{frac:02d} {currency}"


def _text(value: str) -> str:
    return escape(value).replace("\n", "<br/>")


def _party(label: str, party: Party) -> list[Flowable]:
    rows = [Paragraph(label.upper(), LABEL), Paragraph(_text(party.name), _style("pname", 10, bold=True))]
    details = [*party.address_lines]
    if party.email:
        details.append(party.email)
    if party.tax_id:
        details.append(f"Tax ID: {party.tax_id}")
    rows += [Paragraph(_text(line), BODY) for line in details]
    return rows


def _meta(doc: InvoiceDocument, width: float) -> Table:
    status_color = STATUS_COLORS.get(doc.status, INK)
    status = doc.status.replace("_", " ").upper()
    rows = [
        ("Invoice number", escape(doc.number)),
        ("Issue date", doc.issued_on.isoformat()),
    ]
    if doc.due_on:
        rows.append(("Due date", doc.due_on.isoformat()))
    if doc.paid_on:
        rows.append(("Paid on", doc.paid_on.isoformat()))
    rows.append(("Status", f'<font color="{status_color.hexval()}"><b>{escape(status)}</b></font>'))
    table = Table(
        [[Paragraph(k, SMALL), Paragraph(v, RIGHT)] for k, v in rows], colWidths=[24 * mm, width - 24 * mm]
    )
    table.setStyle(
        TableStyle(
            [
                ("VALIGN", (0, 0), (-1, -1), "MIDDLE"),
                ("BOTTOMPADDING", (0, 0), (-1, -1), 1),
                ("LEFTPADDING", (0, 0), (0, -1), 0),
                ("RIGHTPADDING", (-1, 0), (-1, -1), 0),
            ]
        )
    )
    return table


def _reference(doc: InvoiceDocument, width: float) -> list[Flowable]:
    """The reference on one line of its own under the parties (issue 30.13: in the meta column a service
    id wrapped over three lines)."""
    if not doc.reference:
        return []
    table = Table(
        [[Paragraph("Reference", SMALL), Paragraph(escape(doc.reference), BODY)]],
        colWidths=[24 * mm, width - 24 * mm],
    )
    table.setStyle(TableStyle([("VALIGN", (0, 0), (-1, -1), "MIDDLE"), ("LEFTPADDING", (0, 0), (-1, -1), 6)]))
    return [Spacer(0, 3 * mm), table]


def _lines_table(doc: InvoiceDocument, width: float) -> Table:
    data: list[list[Flowable | str]] = [
        [
            Paragraph("DESCRIPTION", TH),
            Paragraph("QTY", TH_RIGHT),
            Paragraph("UNIT PRICE", TH_RIGHT),
            Paragraph("AMOUNT", TH_RIGHT),
        ]
    ]
    for line in doc.lines:
        description = _text(line.description)
        if line.refunded_cents:
            refunded = _money(line.refunded_cents, doc.currency)
            description += f'<br/><font size="7.5" color="#c5221f">Refunded: {refunded}</font>'
        data.append(
            [
                Paragraph(description, BODY),
                Paragraph(f"{line.quantity:,}", RIGHT),
                Paragraph(_money(line.unit_price_cents, doc.currency), RIGHT),
                Paragraph(_money(line.amount_cents, doc.currency), RIGHT),
            ]
        )
    table = Table(data, colWidths=[width - 86 * mm, 18 * mm, 32 * mm, 36 * mm], repeatRows=1)
    table.setStyle(
        TableStyle(
            [
                ("BACKGROUND", (0, 0), (-1, 0), BAND),
                ("LINEBELOW", (0, 0), (-1, 0), 0.8, RULE),
                ("LINEBELOW", (0, 1), (-1, -1), 0.4, RULE),
                ("VALIGN", (0, 0), (-1, -1), "TOP"),
                ("TOPPADDING", (0, 0), (-1, -1), 5),
                ("BOTTOMPADDING", (0, 0), (-1, -1), 5),
            ]
        )
    )
    return table


def _totals(doc: InvoiceDocument) -> Table:
    rows: list[tuple[str, str, bool]] = [
        ("Total", _money(doc.total_cents, doc.currency), not doc.credit_notes)
    ]
    if doc.credit_notes:
        rows.append(("Credited / refunded", _money(-doc.credited_cents, doc.currency), False))
        rows.append(("Net after credits", _money(doc.net_cents, doc.currency), True))
    data = [
        [
            Paragraph(label, RIGHT_BOLD if strong else RIGHT),
            Paragraph(amount, RIGHT_BOLD if strong else RIGHT),
        ]
        for label, amount, strong in rows
    ]
    table = Table(data, colWidths=[45 * mm, 36 * mm], hAlign="RIGHT")
    table.setStyle(
        TableStyle(
            [
                ("LINEABOVE", (0, -1), (-1, -1), 1.0, INK),
                ("TOPPADDING", (0, 0), (-1, -1), 3),
                ("BOTTOMPADDING", (0, 0), (-1, -1), 3),
            ]
        )
    )
    return table


def _credit_notes(doc: InvoiceDocument, width: float) -> Table:
    data: list[list[Flowable]] = [
        [
            Paragraph("CREDIT NOTE", TH),
            Paragraph("DATE", TH),
            Paragraph("REASON", TH),
            Paragraph("AMOUNT", TH_RIGHT),
        ]
    ]
    for note in doc.credit_notes:
        data.append(
            [
                Paragraph(_text(note.number), BODY),
                Paragraph(note.issued_on.isoformat(), BODY),
                Paragraph(_text(note.description), BODY),
                Paragraph(_money(-note.amount_cents, doc.currency), RIGHT),
            ]
        )
    table = Table(data, colWidths=[34 * mm, 24 * mm, width - 94 * mm, 36 * mm], repeatRows=1)
    table.setStyle(
        TableStyle(
            [
                ("BACKGROUND", (0, 0), (-1, 0), BAND),
                ("LINEBELOW", (0, 0), (-1, -1), 0.4, RULE),
                ("VALIGN", (0, 0), (-1, -1), "TOP"),
            ]
        )
    )
    return table


def render_invoice_pdf(invoice: InvoiceDocument) -> bytes:
    """Render `invoice` as a one-or-more-page A4 PDF."""
    register_fonts()
    buffer = io.BytesIO()
    margin = 18 * mm
    template = SimpleDocTemplate(
        buffer,
        pagesize=A4,
        leftMargin=margin,
        rightMargin=margin,
        topMargin=margin,
        bottomMargin=margin + 4 * mm,
        title=f"Invoice {invoice.number}",
        author=invoice.seller.name,
        invariant=True,
    )
    width = template.width - 12  # the frame pads 6 pt on each side

    def footer(canvas: Canvas, _doc: SimpleDocTemplate) -> None:
        canvas.saveState()
        canvas.setFont(FONT, 7.5)
        canvas.setFillColor(MUTED)
        canvas.drawString(margin + 12, margin - 2 * mm, f"{invoice.seller.name} · Invoice {invoice.number}")
        canvas.drawRightString(A4[0] - margin - 12, margin - 2 * mm, f"Page {canvas.getPageNumber()}")
        canvas.restoreState()

    header = Table(
        [[Paragraph(_text(invoice.seller.name), SELLER), Paragraph("INVOICE", TITLE)]],
        colWidths=[width * 0.6, width * 0.4],
    )
    header.setStyle(TableStyle([("VALIGN", (0, 0), (-1, -1), "BOTTOM")]))
    parties = Table(
        [
            [
                _party("From", invoice.seller),
                _party("Bill to", invoice.buyer),
                _meta(invoice, width * 0.38 - 12),
            ]
        ],
        colWidths=[width * 0.31, width * 0.31, width * 0.38],
    )
    parties.setStyle(TableStyle([("VALIGN", (0, 0), (-1, -1), "TOP")]))

    story: list[Flowable] = [
        header,
        Spacer(0, 2 * mm),
        HRFlowable(width=width, thickness=1.2, color=INK, spaceBefore=0, spaceAfter=0),
        Spacer(0, 4 * mm),
        parties,
        *_reference(invoice, width),
        Spacer(0, 8 * mm),
        _lines_table(invoice, width),
        Spacer(0, 3 * mm),
        _totals(invoice),
    ]
    if invoice.credit_notes:
        story += [
            Spacer(0, 8 * mm),
            Paragraph("Credit notes and refunds", _style("h2", 10, bold=True, leftIndent=6)),
            Spacer(0, 2 * mm),
            _credit_notes(invoice, width),
        ]
    if invoice.notes:
        story.append(Spacer(0, 8 * mm))
        story += [Paragraph(_text(note), NOTE) for note in invoice.notes]
    story += [
        Spacer(0, 4 * mm),
        Paragraph(f"All amounts in {escape(invoice.currency)}.", NOTE),
    ]
    template.build(story, onFirstPage=footer, onLaterPages=footer)
    return buffer.getvalue()
