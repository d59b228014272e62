"""Traffic purchases are invoiced like every purchase (issue 32): add_traffic and an auto top-up each write
a paid invoice of kind "traffic" whose line is GB x the per-GB rate, linked from the ledger entry, with a
PDF that names it; a replayed add_traffic writes no second invoice."""

from __future__ import annotations

import httpx
import pytest

from proxyplane.domains.pricing import format_usd
from proxyplane.domains.quotas import service as quotas
from proxyplane.platform import Platform
from tests.adapters.rest.test_invoices import pdf_text
from tests.domains.quotas.support import flush, metered_service
from tests.support import Account, bearer

pytestmark = pytest.mark.anyio
API = "/api/v1/customer"


async def traffic_invoices(client: httpx.AsyncClient, h: dict[str, str], sid: str) -> list[dict]:
    page = (await client.get(f"{API}/invoices", params={"service_id": sid}, headers=h)).json()
    return [i for i in page["items"] if i["kind"] == "traffic"]


async def test_add_traffic_writes_an_invoice_with_a_pdf(
    client: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    svc = await metered_service(platform, account, quotas.GB, gb_price_cents=175)
    sid = str(svc.service_id)
    h = bearer(await account.key())
    await account.credit(10_000)
    body = {"gb": 3, "idempotency_key": "inv-3"}
    r = await client.post(f"{API}/services/{sid}/traffic", json=body, headers=h)
    assert r.status_code == 200 and r.json()["charged_cents"] == 525, r.text
    assert (await client.post(f"{API}/services/{sid}/traffic", json=body, headers=h)).status_code == 200

    (inv,) = await traffic_invoices(client, h, sid)  # the replay wrote none
    assert (inv["status"], inv["total_cents"], inv["payment_method"]) == ("paid", 525, "wallet")
    assert [(x["quantity"], x["unit_price_cents"], x["amount_cents"]) for x in inv["lines"]] == [
        (3, 175, 525)
    ]
    assert f"#{svc.number}" in inv["description"] and "3 GB" in inv["description"]
    ledger = (await client.get(f"{API}/wallet/ledger", headers=h)).json()["items"]
    (entry,) = [e for e in ledger if e["kind"] == "traffic"]
    assert (entry["amount_cents"], entry["invoice_id"]) == (-525, inv["invoice_id"])

    r = await client.get(f"{API}/invoices/{inv['invoice_id']}/pdf", headers=h)
    assert r.status_code == 200 and r.content.startswith(b"%PDF")
    text = pdf_text(r.content)
    assert inv["number"] in text and format_usd(525) in text and "Traffic GB" in text


async def test_auto_topup_writes_an_invoice(
    client: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    svc = await metered_service(platform, account, quotas.GB, gb_price_cents=120, period="none")
    sid = str(svc.service_id)
    h = bearer(await account.key())
    await account.credit(1_000)
    r = await client.put(
        f"{API}/services/{sid}/traffic/auto-top-up",
        json={"enabled": True, "threshold_pct": 90, "gb": 2, "max_per_period": 1},
        headers=h,
    )
    assert r.status_code == 200, r.text
    await flush(platform, svc.service_id, quotas.GB * 95 // 100)
    (inv,) = await traffic_invoices(client, h, sid)
    assert inv["total_cents"] == 240 and inv["description"].startswith("Auto top-up: 2 GB")
    assert "never expires" in inv["lines"][0]["description"]
    ledger = (await client.get(f"{API}/wallet/ledger", headers=h)).json()["items"]
    assert [e["invoice_id"] for e in ledger if e["kind"] == "traffic"] == [inv["invoice_id"]]
