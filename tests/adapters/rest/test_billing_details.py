"""Billing details (issue 22.8): company, address and VAT id set through PATCH /customer/me, read back,
printed on the invoice PDF with display names instead of internal product ids; bad VAT ids refused."""

from __future__ import annotations

import uuid

import httpx
import pytest
from sqlalchemy import update

from proxyplane.platform import Platform
from proxyplane.storage.models.billing import Invoice
from tests.adapters.rest.test_invoices import pdf_text
from tests.domains.stock.support import fresh_stock
from tests.support import Account, bearer

pytestmark = pytest.mark.anyio
API = "/api/v1"


async def test_billing_details_on_profile_and_invoice(
    client: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    key = await account.key()
    details = {
        "billing_company": "Example Data GmbH",
        "billing_address": "Musterstrasse 1\r\n\r\n10115 Berlin\nGermany",
        "billing_vat_id": "de123456789",
    }
    r = await client.patch(f"{API}/customer/me", json=details, headers=bearer(key))
    assert r.status_code == 200, r.text
    me = (await client.get(f"{API}/customer/me", headers=bearer(key))).json()
    assert (me["billing_company"], me["billing_address"], me["billing_vat_id"]) == (
        "Example Data GmbH",
        "Musterstrasse 1\n10115 Berlin\nGermany",
        "DE123456789",
    )
    assert me["name"] == "Test User"  # untouched
    bad = await client.patch(f"{API}/customer/me", json={"billing_vat_id": "<b>"}, headers=bearer(key))
    assert bad.status_code == 422

    await fresh_stock(platform, "proxy_isp", "LV", 8)
    await account.credit(10_000)
    order = {
        "product_kind": "proxy_isp",
        "period_months": 1,
        "segments": [{"country": "LV", "count": 8}],
        "whitelist_ips": ["127.0.0.9"],
        "use_balance": True,
        "idempotency_key": uuid.uuid4().hex,
    }
    made = await client.post(f"{API}/billing/composite/order", json=order, headers=bearer(key))
    assert made.status_code == 201, made.text
    inv = (await client.get(f"{API}/customer/invoices", headers=bearer(key))).json()["items"][0]
    assert "proxy_" not in inv["description"] and "ISP IPs" in inv["description"]
    assert all("proxy_" not in line["description"] for line in inv["lines"])
    pdf = await client.get(f"{API}/customer/invoices/{inv['invoice_id']}/pdf", headers=bearer(key))
    assert pdf.status_code == 200
    text = pdf_text(pdf.content)
    for expected in (
        "Example Data GmbH",
        "Attn. Test User",
        "Musterstrasse 1",
        "10115 Berlin",
        "DE123456789",
    ):
        assert expected in text, (expected, text)
    assert "proxy_isp" not in text
    ledger = (await client.get(f"{API}/customer/wallet/ledger", headers=bearer(key))).json()["items"]
    assert ledger[0]["kind"] == "purchase" and "8 ISP IPs" in ledger[0]["description"]

    cleared = await client.patch(f"{API}/customer/me", json={"billing_company": ""}, headers=bearer(key))
    assert cleared.json()["billing_company"] == "" and cleared.json()["billing_vat_id"] == "DE123456789"


async def test_issued_invoice_keeps_its_billing_details(
    client: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    key = await account.key()
    await fresh_stock(platform, "proxy_isp", "LV", 4)
    await account.credit(10_000)

    async def order_invoice() -> str:
        order = {
            "product_kind": "proxy_isp",
            "period_months": 1,
            "segments": [{"country": "LV", "count": 2}],
            "whitelist_ips": ["127.0.0.9"],
            "use_balance": True,
            "idempotency_key": uuid.uuid4().hex,
        }
        made = await client.post(f"{API}/billing/composite/order", json=order, headers=bearer(key))
        assert made.status_code == 201, made.text
        items = (await client.get(f"{API}/customer/invoices", headers=bearer(key))).json()["items"]
        return str(items[0]["invoice_id"])

    async def pdf(invoice_id: str) -> str:
        r = await client.get(f"{API}/customer/invoices/{invoice_id}/pdf", headers=bearer(key))
        assert r.status_code == 200, r.text
        return pdf_text(r.content)

    old = {"billing_company": "Old Name Ltd", "billing_address": "1 Old Road", "billing_vat_id": "GB111"}
    assert (await client.patch(f"{API}/customer/me", json=old, headers=bearer(key))).status_code == 200
    first = await order_invoice()
    new = {"billing_company": "New Name AG", "billing_address": "2 New Street", "billing_vat_id": "CH222"}
    assert (await client.patch(f"{API}/customer/me", json=new, headers=bearer(key))).status_code == 200
    second = await order_invoice()
    assert first != second

    first_text, second_text = await pdf(first), await pdf(second)
    for kept in ("Old Name Ltd", "1 Old Road", "GB111"):
        assert kept in first_text, (kept, first_text)
    for changed in ("New Name AG", "2 New Street", "CH222"):
        assert changed not in first_text and changed in second_text, (changed, second_text)
    assert "Old Name Ltd" not in second_text

    # an invoice issued before the copy existed (NULL copy, migration 0016d) shows the current details
    async with platform.db.unit_of_work() as uow:
        await uow.session.execute(
            update(Invoice)
            .where(Invoice.id == int(first))
            .values(billing_company=None, billing_address=None, billing_vat_id=None)
        )
        await uow.commit()
    legacy_text = await pdf(first)
    assert "New Name AG" in legacy_text and "Old Name Ltd" not in legacy_text, legacy_text
