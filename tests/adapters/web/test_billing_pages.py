"""Invoices page (list, PDF download) and catalog page (buy a rotating and a parameterised product)."""

from __future__ import annotations

import io
import re

import httpx
import pytest
from pypdf import PdfReader

from proxyplane.domains.stock.seed import seed_demo
from proxyplane.platform import Platform
from tests.adapters.web.helpers import csrf_of, post_form
from tests.adapters.web.test_buy_and_services import COUNTRY, buy, buyer
from tests.domains.stock.support import fresh_stock
from tests.support import bearer

pytestmark = pytest.mark.anyio


async def seeded(platform: Platform) -> None:
    async with platform.db.unit_of_work() as uow:
        await seed_demo(uow.session)
        await uow.commit()


def product_form(page: str, name: str) -> str:
    """The action URL of the buy form of the product card titled `name`."""
    card = re.search(rf'<h2>{re.escape(name)}</h2>.*?action="(/catalog/[0-9a-f-]+)"', page, re.S)
    assert card, name
    return card.group(1)


async def test_catalog_buy_rotating_then_invoice_pdf(client: httpx.AsyncClient, platform: Platform) -> None:
    await seeded(platform)
    _, key = await buyer(client, platform, 5_000)
    page = await client.get("/catalog")
    assert page.status_code == 200 and "Rotating datacenter: 10 GB" in page.text
    products = (await client.get("/api/v1/customer/catalog?limit=100", headers=bearer(key))).json()["items"]
    rotating = next(p for p in products if p["name"] == "Rotating datacenter: 10 GB")
    action = product_form(page.text, rotating["name"])
    assert action == f"/catalog/{rotating['product_id']}"
    r = await client.post(action, data={"csrf": csrf_of(page), "idempotency_key": "cat-1"})
    assert r.status_code == 303, r.text
    sid = r.headers["location"].rsplit("/", 1)[1]
    svc = (await client.get(f"/api/v1/customer/services/{sid}", headers=bearer(key))).json()
    assert svc["product_kind"] == "proxy_rotating" and svc["status"] == "active"
    balance = (await client.get("/api/v1/customer/wallet/balance", headers=bearer(key))).json()
    assert balance["balance_cents"] == 5_000 - rotating["price_cents"]
    shown = await client.get(r.headers["location"])
    assert "bought" in shown.text and "Rotating gateway" in shown.text

    # the parameter select (country enum) is on the page; an unknown value is refused next to the form
    starter = next(p for p in products if p["name"].startswith("Datacenter starter"))
    assert 'name="param_country"' in page.text
    bad = await post_form(
        client,
        "/catalog",
        f"/catalog/{starter['product_id']}",
        {"param_country": "ZZ", "idempotency_key": "c2"},
    )
    assert bad.status_code in (409, 422) and 'class="error"' in bad.text

    await fresh_stock(platform, "proxy_datacenter", COUNTRY, 8)
    ordered = await buy(client, count=8)  # a composite order records an invoice
    assert ordered.status_code == 303, ordered.text
    invoices = (await client.get("/api/v1/customer/invoices", headers=bearer(key))).json()["items"]
    listing = await client.get("/invoices")
    assert listing.status_code == 200
    for inv in invoices:
        assert inv["number"] in listing.text
        assert f'href="/invoices/{inv["invoice_id"]}.pdf"' in listing.text
    assert invoices
    first = invoices[0]
    pdf = await client.get(f"/invoices/{first['invoice_id']}.pdf")
    assert pdf.status_code == 200 and pdf.headers["content-type"] == "application/pdf"
    assert "attachment" in pdf.headers["content-disposition"]
    text = "".join(p.extract_text() for p in PdfReader(io.BytesIO(pdf.content)).pages)
    assert first["number"] in text
    assert (await client.get("/invoices/99999999999.pdf")).status_code == 404
    assert (await client.get("/invoices/abc.pdf")).status_code == 404
