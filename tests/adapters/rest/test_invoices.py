"""Invoices: every charge and top-up has one, with lines summing to the charge; refunds add credit notes;
the PDF is a real PDF (pypdf reads the number, seller, customer, total and status); others get 404."""

from __future__ import annotations

import io
import uuid

import httpx
import pytest
from pypdf import PdfReader

from proxyplane.domains.pricing import format_usd
from proxyplane.platform import Platform
from tests.adapters.rest.growth_support import API, age, buy
from tests.support import bearer, make_account

pytestmark = pytest.mark.anyio


def pdf_text(content: bytes) -> str:
    reader = PdfReader(io.BytesIO(content))
    return " ".join(" ".join(page.extract_text() for page in reader.pages).split())


async def test_order_invoice_pdf_and_credit_note(client: httpx.AsyncClient, platform: Platform) -> None:
    b = await buy(client, platform, country="BG", count=8, stock=8, months=3)
    r = await client.get(f"{API}/customer/invoices", headers=b.headers)
    assert r.status_code == 200, r.text
    page = r.json()
    assert page["total"] == 1
    inv = page["items"][0]
    assert inv["kind"] == "order" and inv["status"] == "paid" and inv["legacy_status"] == "Paid"
    assert inv["service_id"] == b.sid and inv["payment_method"] == "wallet"
    assert (
        inv["total_cents"] == b.service["period_price_cents"] == sum(x["amount_cents"] for x in inv["lines"])
    )
    assert any(x["amount_cents"] < 0 and "Term discount" in x["description"] for x in inv["lines"])
    ledger = (await client.get(f"{API}/customer/wallet/ledger", headers=b.headers)).json()["items"]
    assert ledger[0]["invoice_id"] == inv["invoice_id"]

    r = await client.get(f"{API}/customer/invoices/{inv['invoice_id']}/pdf", headers=b.headers)
    assert r.status_code == 200 and r.headers["content-type"] == "application/pdf"
    assert r.content.startswith(b"%PDF")
    text = pdf_text(r.content)
    assert inv["number"] in text and format_usd(inv["total_cents"]) in text
    assert f"Customer #{b.account.customer_id}" in text and "Test User" in text and "ProxyPlane" in text
    assert b.account.email in text.replace(" ", "") and "PAID" in text.upper()

    # another customer: 404 for the PDF and the record; an unknown or malformed id: 404 too
    other = await (await make_account(platform)).key()
    for path in (f"{inv['invoice_id']}/pdf", inv["invoice_id"], "999999999/pdf", "abc/pdf"):
        assert (await client.get(f"{API}/customer/invoices/{path}", headers=bearer(other))).status_code == 404
    no_wallet = await b.account.key({"services:read"})
    r = await client.get(f"{API}/customer/invoices/{inv['invoice_id']}/pdf", headers=bearer(no_wallet))
    assert r.status_code == 403

    # cancel 10 days in: the refund becomes a credit note on the order's invoice
    await age(platform, b.sid, 10)
    r = await client.post(f"{API}/customer/services/{b.sid}/cancel", headers=b.headers)
    assert r.status_code == 200, r.text
    refund = r.json()["refunded_cents"]
    assert refund > 0
    inv = (await client.get(f"{API}/customer/invoices/{inv['invoice_id']}", headers=b.headers)).json()
    assert inv["status"] == "partially_refunded" and inv["refunded_cents"] == refund
    assert [n["amount_cents"] for n in inv["credit_notes"]] == [refund]
    assert inv["net_cents"] == inv["total_cents"] - refund
    text = pdf_text(
        (await client.get(f"{API}/customer/invoices/{inv['invoice_id']}/pdf", headers=b.headers)).content
    )
    assert inv["credit_notes"][0]["number"] in text and format_usd(refund) in text


async def test_renewal_and_topup_invoices(client: httpx.AsyncClient, platform: Platform) -> None:
    b = await buy(client, platform, country="SK", count=8, stock=8)
    r = await client.post(
        f"{API}/customer/services/{b.sid}/renew",
        json={"period_months": 3, "idempotency_key": uuid.uuid4().hex},
        headers=b.headers,
    )
    assert r.status_code == 200, r.text
    charged = r.json()["charged_cents"]
    items = (await client.get(f"{API}/customer/invoices", headers=b.headers)).json()["items"]
    assert [i["kind"] for i in items] == ["renewal", "order"]
    assert items[0]["total_cents"] == charged == sum(x["amount_cents"] for x in items[0]["lines"])
    only = await client.get(f"{API}/customer/invoices?service_id={b.sid}&limit=1", headers=b.headers)
    assert only.json()["total"] == 2 and len(only.json()["items"]) == 1

    # a top-up paid at the test checkout
    dep = (
        await client.post(
            f"{API}/customer/wallet/deposit/init",
            json={"amount_cents": 2500, "payment_method": "card", "idempotency_key": uuid.uuid4().hex},
            headers=b.headers,
        )
    ).json()
    path = dep["checkout_url"].removeprefix("http://testserver")
    token = path.split("token=")[1]
    r = await client.post(
        f"/checkout/test/{dep['deposit_id']}/decide", data={"token": token, "decision": "paid"}
    )
    assert r.status_code == 200
    top = (await client.get(f"{API}/customer/invoices", headers=b.headers)).json()["items"][0]
    assert top["kind"] == "deposit" and top["total_cents"] == 2500 and top["payment_method"] == "card"
    assert top["status"] == "paid" and top["service_id"] is None


async def test_checkout_order_invoice_is_open_until_paid_or_void(
    client: httpx.AsyncClient, platform: Platform
) -> None:
    from tests.domains.stock.support import fresh_stock

    await fresh_stock(platform, "proxy_datacenter", "LT", 16, capacity=1)
    account = await make_account(platform)
    key = await account.key()
    results = {}
    for decision in ("paid", "failed"):
        body = {
            "product_kind": "proxy_datacenter",
            "period_months": 1,
            "segments": [{"country": "LT", "count": 8}],
            "whitelist_ips": ["127.0.0.9"],
            "use_balance": False,
            "idempotency_key": uuid.uuid4().hex,
        }
        order = (await client.post(f"{API}/billing/composite/order", json=body, headers=bearer(key))).json()
        inv = (await client.get(f"{API}/customer/invoices", headers=bearer(key))).json()["items"][0]
        assert (
            inv["status"] == "open" and inv["legacy_status"] == "Unpaid" and inv["payment_method"] == "card"
        )
        assert inv["total_cents"] == order["total_cents"]
        body_, headers = platform.processor().signed_callback(
            uuid.UUID(order["deposit_id"]), decision, order["amount_due_cents"]
        )
        r = await client.post(f"{API}/payments/test/callback", content=body_, headers=headers)
        assert r.status_code == 200
        results[decision] = (
            await client.get(f"{API}/customer/invoices/{inv['invoice_id']}", headers=bearer(key))
        ).json()
    assert results["paid"]["status"] == "paid" and results["paid"]["paid_at"]
    assert results["failed"]["status"] == "void"
    kinds = [
        i["kind"] for i in (await client.get(f"{API}/customer/invoices", headers=bearer(key))).json()["items"]
    ]
    assert kinds == ["order", "order"]  # a checkout that pays an order is not a separate top-up invoice
