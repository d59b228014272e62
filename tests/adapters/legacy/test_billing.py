"""billing/invoices, billing/invoice/{id}; update_list through the v1 IP refresh, then its throttle."""

from __future__ import annotations

import httpx
import pytest

from proxyplane.platform import Platform
from tests.adapters.legacy.support import JSON, auth, buy, static_product
from tests.domains.stock.support import fresh_stock
from tests.support import Account, bearer, make_account

pytestmark = pytest.mark.anyio
GENERIC = b'{"error":"Unprocessable Entity"}'


async def test_invoices_of_a_legacy_order(
    client: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    assert (await client.get("/api/billing/invoices", headers=auth(account))).content == b"[]"
    await fresh_stock(platform, "proxy_isp", "MD", 40)
    await account.credit(10_000)
    made = await buy(client, account, 2, setip="192.0.2.44")
    assert made["invoiceId"] > 0
    key = await account.key()
    v1 = (await client.get("/api/v1/customer/invoices", headers=bearer(key))).json()
    inv = next(i for i in v1["items"] if str(made["invoiceId"]) in str(i.get("invoice_id", i.get("id"))))
    r = await client.get("/api/billing/invoices", headers=auth(account))
    assert (r.status_code, r.headers["content-type"]) == (200, JSON)
    listed = r.json()
    assert [i["id"] for i in listed] == [made["invoiceId"]]
    one = listed[0]
    assert (
        one["status"] == "Paid" and one["serviceid"] == made["serviceId"] and one["amount"] == made["amount"]
    )
    assert one["paymentmethod"] == "wallet" and one["date_refunded"] is None
    assert one["date_paid"] == one["created_at"] and len(one["created_at"]) == 10
    assert inv  # the same invoice is served by v1
    r = await client.get(f"/api/billing/invoice/{made['invoiceId']}", headers=auth(account))
    assert (
        r.content
        == b"[" + (await client.get("/api/billing/invoices", headers=auth(account))).content[1:-1] + b"]"
    )
    expected = (
        f'[{{"id":{one["id"]},"description":"{one["description"]}","status":"Paid",'
        f'"created_at":"{one["created_at"]}","amount":{made["amount"]:.2f},"date_refunded":null,'
        f'"date_paid":"{one["date_paid"]}","paymentmethod":"wallet","serviceid":{made["serviceId"]}}}]'
    ).encode()
    assert r.content == expected
    # cancelling through v1 refunds: the legacy invoice shows the refund date
    svc = next(
        s
        for s in (await client.get("/api/v1/customer/services", headers=bearer(key))).json()["items"]
        if s["service_number"] == made["serviceId"]
    )
    assert (
        await client.post(f"/api/v1/customer/services/{svc['service_id']}/cancel", headers=bearer(key))
    ).status_code == 200
    again = (await client.get(f"/api/billing/invoice/{made['invoiceId']}", headers=auth(account))).json()[0]
    assert again["date_refunded"] == again["created_at"] and again["status"] in ("Paid", "Refunded")
    other = await make_account(platform)
    for path in (
        f"/api/billing/invoice/{made['invoiceId']}",
        "/api/billing/invoice/abc",
        "/api/billing/invoice/999999999",
    ):
        r = await client.get(path, headers=auth(other))
        assert (r.status_code, r.content) == (422, GENERIC), path


async def test_update_list_refreshes_then_throttles(
    client: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    await account.credit(10_000)
    number = (await buy(client, account, (await static_product(platform, ips=2))[0]))["serviceId"]
    before = (await client.get(f"/api/iplist/http-ip/json/{number}", headers=auth(account))).json()
    r = await client.put(f"/api/service/{number}", json={"update_list": "true"}, headers=auth(account))
    assert (r.status_code, r.content) == (200, b'{"update_list":"IP list updated successfully"}')
    after = (await client.get(f"/api/iplist/http-ip/json/{number}", headers=auth(account))).json()
    assert len(after) == 2 and not set(after) & set(before)
    r = await client.put(
        f"/api/service/{number}", json={"update_list": True, "setip": "198.51.100.1"}, headers=auth(account)
    )
    assert r.status_code == 429 and r.content.startswith(
        b'{"error":"Too Many Attempts (updateList). Next update possible: '
    )
    assert {"retry-after", "x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset"} <= set(
        r.headers
    )
    # the refused call changed nothing: the bound IP is still the one of the purchase
    assert (await client.get(f"/api/service/{number}", headers=auth(account))).json()[
        "bindedip"
    ] == "203.0.113.7"


async def test_catalog_product_purchase_returns_its_invoice(
    client: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    pid, _ = await static_product(platform, "MD", ips=2)
    await account.credit(1_000)
    made = await buy(client, account, pid, setip="192.0.2.45")
    assert made["invoiceId"] > 0 and made["amount"] == 2.5
    key = await account.key()
    v1 = (await client.get(f"/api/v1/customer/invoices/{made['invoiceId']}", headers=bearer(key))).json()
    assert v1["kind"] == "catalog" and v1["total_cents"] == 250 and v1["status"] == "paid"
    listed = (await client.get("/api/billing/invoices", headers=auth(account))).json()
    assert [(i["id"], i["serviceid"], i["status"]) for i in listed] == [
        (made["invoiceId"], made["serviceId"], "Paid")
    ]
    again = await buy(client, account, pid, setip="192.0.2.45")  # a repeat: the same service and invoice
    assert (again["serviceId"], again["invoiceId"], again["amount"]) == (
        made["serviceId"],
        made["invoiceId"],
        0,
    )


async def test_paid_update_list_charges_the_refresh_price(
    client: httpx.AsyncClient, platform: Platform, account: Account, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The free refresh of the window used, update_list charges the wallet (it is declared as spending
    money: it used to answer 500 from the undeclared-spending guard)."""
    monkeypatch.setenv("PROXYPLANE_LEGACY_UPDATE_LIST_SECONDS", "0")
    await account.credit(10_000)
    number = (await buy(client, account, (await static_product(platform, ips=2))[0]))["serviceId"]
    key = await account.key()

    async def balance() -> int:
        r = await client.get("/api/v1/customer/wallet/balance", headers=bearer(key))
        return int(r.json()["balance_cents"])

    paid = await balance()
    r = await client.put(f"/api/service/{number}", json={"update_list": "true"}, headers=auth(account))
    assert (r.status_code, r.content) == (200, b'{"update_list":"IP list updated successfully"}')
    assert await balance() == paid  # the window's free refresh
    before = (await client.get(f"/api/iplist/http-ip/json/{number}", headers=auth(account))).json()
    r = await client.put(f"/api/service/{number}", json={"update_list": "true"}, headers=auth(account))
    assert (r.status_code, r.content) == (200, b'{"update_list":"IP list updated successfully"}')
    after = (await client.get(f"/api/iplist/http-ip/json/{number}", headers=auth(account))).json()
    assert len(after) == 2 and not set(after) & set(before)
    assert 0 < paid - await balance()
