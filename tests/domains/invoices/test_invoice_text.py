"""Issue 30.13: invoices say "1 month" / "3 months" (also for lines stored as "month(s)"), print the seller
block in full (name, address, email, tax id: PROXYPLANE_SELLER_*, demo values when unset), and keep the
reference on one line of the PDF."""

from __future__ import annotations

import datetime
import io
import uuid

import pytest
from pypdf import PdfReader

from proxyplane.core.product_names import humanize, months
from proxyplane.domains.invoices.pdf import InvoiceDocument, InvoiceLine, Party, render_invoice_pdf
from proxyplane.domains.invoices.service import seller


def test_month_plurals() -> None:
    assert [months(n) for n in (1, 3, 12)] == ["1 month", "3 months", "12 months"]
    assert humanize("Order #4: 10 proxy_isp IPs, 1 month(s)") == "Order #4: 10 ISP IPs, 1 month"
    assert humanize("Renewal of service #4 for 6 month(s)") == "Renewal of service #4 for 6 months"


def _pdf_text(reference: str) -> str:
    doc = InvoiceDocument(
        number="INV-000042",
        issued_on=datetime.date(2026, 12, 2),
        status="paid",
        seller=seller(),
        buyer=Party("Acme GmbH", ("Hauptstr. 1",), "ana@example.com"),
        lines=(InvoiceLine(humanize("Order #1: 10 proxy_datacenter IPs, 1 month(s)"), 1, 1300, 1300),),
        reference=reference,
    )
    return "\n".join(page.extract_text() for page in PdfReader(io.BytesIO(render_invoice_pdf(doc))).pages)


def test_seller_block_in_full_from_the_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROXYPLANE_SELLER_NAME", "Loopback Proxies SRL")
    monkeypatch.setenv("PROXYPLANE_SELLER_ADDRESS", "Str. Exemplu 7|Cluj 400000|Romania")
    monkeypatch.setenv("PROXYPLANE_SELLER_EMAIL", "invoices@loopback.example")
    monkeypatch.setenv("PROXYPLANE_SELLER_TAX_ID", "RO12345678")
    text = _pdf_text("service x")
    for part in (
        "Loopback Proxies SRL",
        "Str. Exemplu 7",
        "Cluj 400000",
        "invoices@loopback.example",
        "RO12345678",
    ):
        assert part in text, part
    assert "1 month" in text and "month(s)" not in text


def test_unset_seller_settings_print_the_demo_block(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("NAME", "ADDRESS", "EMAIL", "TAX_ID"):
        monkeypatch.delenv(f"PROXYPLANE_SELLER_{name}", raising=False)
    party = seller()
    assert party.name and party.address_lines and party.email and party.tax_id


def test_the_reference_stays_on_one_line() -> None:
    reference = f"service {uuid.uuid4()}"
    lines = _pdf_text(reference).splitlines()
    assert any(reference in line for line in lines), [line for line in lines if "service" in line]
