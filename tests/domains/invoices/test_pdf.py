import io
from datetime import date

from pypdf import PdfReader

from proxyplane.domains.invoices.pdf import (
    CreditNote,
    InvoiceDocument,
    InvoiceLine,
    Party,
    render_invoice_pdf,
)

SELLER = Party(
    name="ProxyPlane Demo LLC",
    address_lines=("1 Example Street", "Wilmington, DE 19801", "United States"),
    email="billing@proxyplane.example",
    tax_id="US-12-3456789",
)
BUYER = Party(
    name="Jürgen Müller — Иван Петров",
    address_lines=("Große Straße 5", "10115 Berlin, Deutschland"),
    email="juergen@example.de",
)


def sample_invoice(**changes) -> InvoiceDocument:
    fields = dict(
        number="INV-2026-000123",
        issued_on=date(2026, 3, 1),
        status="paid",
        seller=SELLER,
        buyer=BUYER,
        lines=(
            InvoiceLine("Datacenter proxies, US, 30 IPs, 3 months", 30, 33, 990),
            InvoiceLine("Datacenter proxies, DE, 25 IPs, 3 months", 25, 33, 825, refunded_cents=275),
            InvoiceLine("Term discount 3 months (5 %)", 1, -91, -91),
            InvoiceLine("Add-on: UDP × 55 IPs", 55, 3, 165),
        ),
        credit_notes=(
            CreditNote("CN-2026-000007", date(2026, 3, 20), "Cancelled DE segment, unused time", 275),
        ),
        due_on=date(2026, 3, 1),
        paid_on=date(2026, 3, 1),
        reference="service 6f1c2a7e-1b7a-4a8e-9c55-3f0d2a9b8e11",
        notes=("Thank you for your business.",),
    )
    fields.update(changes)
    return InvoiceDocument(**fields)


def extract(pdf: bytes) -> str:
    reader = PdfReader(io.BytesIO(pdf))
    # words only: a long name may wrap onto two lines of its column
    return " ".join(" ".join(page.extract_text() for page in reader.pages).split())


def test_invoice_pdf_carries_number_names_status_lines_and_totals():
    invoice = sample_invoice()
    assert (invoice.total_cents, invoice.credited_cents, invoice.net_cents) == (1889, 275, 1614)
    pdf = render_invoice_pdf(invoice)
    assert pdf.startswith(b"%PDF-")
    text = extract(pdf)
    for expected in [
        "INV-2026-000123",
        "2026-03-01",
        "PAID",
        "ProxyPlane Demo LLC",
        "Jürgen Müller",
        "Иван Петров",
        "Große Straße 5",
        "Datacenter proxies, US, 30 IPs, 3 months",
        "$9.90",
        "-$0.91",
        "Refunded: $2.75",
        "$18.89",  # total
        "CN-2026-000007",
        "-$2.75",
        "$16.14",  # net after credits
        "US-12-3456789",
    ]:
        assert expected in text, expected


def test_invoice_without_credit_notes_shows_only_the_total_and_open_status():
    invoice = sample_invoice(
        status="open",
        lines=(InvoiceLine("ISP proxies, NL, 1200 IPs, 1 month", 1200, 25, 30000),),
        credit_notes=(),
        paid_on=None,
    )
    text = extract(render_invoice_pdf(invoice))
    assert "OPEN" in text and "$300.00" in text and "1,200" in text
    assert "Credit notes" not in text and "Net after credits" not in text


def test_long_invoices_flow_onto_more_pages_and_rendering_is_repeatable():
    lines = tuple(InvoiceLine(f"Segment {i}: Україна / Österreich", 1, 100, 100) for i in range(120))
    invoice = sample_invoice(lines=lines, credit_notes=())
    pdf = render_invoice_pdf(invoice)
    reader = PdfReader(io.BytesIO(pdf))
    assert len(reader.pages) > 1
    assert "$120.00" in reader.pages[-1].extract_text()
    assert render_invoice_pdf(invoice) == pdf
