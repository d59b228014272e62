"""GET /customer/catalog, GET /customer/catalog/{id}, POST /customer/services (catalog purchase)."""

import asyncio
import uuid

import httpx
import pytest

from proxyplane.core.gateway_settings import GatewaySettings
from proxyplane.domains.stock.seed import seed_demo
from proxyplane.platform import Platform
from tests.adapters.rest.test_order import balance
from tests.domains.stock.support import fresh_stock
from tests.support import Account, bearer

pytestmark = pytest.mark.anyio


async def _seeded(platform: Platform) -> None:
    async with platform.db.unit_of_work() as uow:
        await seed_demo(uow.session)
        await uow.commit()


async def _product(client: httpx.AsyncClient, key: str, name_start: str) -> dict:
    items = (await client.get("/api/v1/customer/catalog?limit=100", headers=bearer(key))).json()["items"]
    return next(p for p in items if p["name"].startswith(name_start))


async def test_catalog_list_get_bounds_scopes(
    client: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    await _seeded(platform)
    key = await account.key()
    page = (await client.get("/api/v1/customer/catalog", headers=bearer(key))).json()
    assert page["total"] >= 5 and page["limit"] == 50 and page["offset"] == 0
    assert any(p["kind"] == "proxy_rotating" for p in page["items"])
    one = page["items"][0]
    got = await client.get(f"/api/v1/customer/catalog/{one['product_id']}", headers=bearer(key))
    assert got.status_code == 200 and got.json() == one
    assert (
        await client.get(f"/api/v1/customer/catalog/{uuid.uuid4()}", headers=bearer(key))
    ).status_code == 404
    for bad in ("limit=0", "limit=101", "offset=-1"):
        assert (await client.get(f"/api/v1/customer/catalog?{bad}", headers=bearer(key))).status_code == 422
    no_scope = await account.key({"services:read"})
    assert (await client.get("/api/v1/customer/catalog", headers=bearer(no_scope))).status_code == 403


async def test_buy_rotating_once_per_product_and_parameters(
    client: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    await _seeded(platform)
    key = await account.key()
    await account.credit(2_000)
    product = await _product(client, key, "Rotating datacenter")
    body = {"product_id": product["product_id"], "parameters": {}}
    results = await asyncio.gather(
        *[client.post("/api/v1/customer/services", json=body, headers=bearer(key)) for _ in range(5)]
    )
    assert all(r.status_code == 201 for r in results), [r.text for r in results]
    assert len({r.json()["service"]["service_id"] for r in results}) == 1
    assert sum(r.json()["created"] for r in results) == 1
    assert await balance(client, key) == 2_000 - product["price_cents"]
    svc = results[0].json()["service"]
    assert svc["status"] == "active" and "gateway" not in svc["parameters"]  # no stored copy (issue 22.2)
    cfg = await client.get(f"/api/v1/customer/services/{svc['service_id']}/proxy/config", headers=bearer(key))
    gw = GatewaySettings()
    assert (cfg.json()["host"], cfg.json()["http_port"]) == (gw.host, gw.http_port)  # the settings


async def test_buy_proxy_product_with_parameters_and_402(
    client: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    await _seeded(platform)
    await fresh_stock(platform, "proxy_datacenter", "NL", 20)
    key = await account.key()
    product = await _product(client, key, "Datacenter starter")
    body = {
        "product_id": product["product_id"],
        "parameters": {"country": "NL"},
        "whitelist_ips": ["127.0.0.9"],
    }
    r = await client.post("/api/v1/customer/services", json=body, headers=bearer(key))
    assert r.status_code == 402 and await balance(client, key) == 0
    assert (await client.get("/api/v1/customer/services", headers=bearer(key))).json()["total"] == 0
    await account.credit(1_000)
    bad = await client.post(
        "/api/v1/customer/services", json={**body, "parameters": {"country": "JP"}}, headers=bearer(key)
    )
    assert bad.status_code == 422
    r = await client.post("/api/v1/customer/services", json=body, headers=bearer(key))
    assert r.status_code == 201 and r.json()["service"]["ip_count"] == 10
    assert {i["country"] for i in r.json()["service"]["ips"]} == {"NL"}
    no_spend = await account.key({"services:write"})
    assert (
        await client.post("/api/v1/customer/services", json=body, headers=bearer(no_spend))
    ).status_code == 403


async def test_catalog_purchase_records_a_paid_invoice_once(
    client: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    await _seeded(platform)
    key = await account.key()
    await account.credit(2_000)
    product = await _product(client, key, "Rotating datacenter")
    body = {"product_id": product["product_id"], "parameters": {}}
    r = await client.post("/api/v1/customer/services", json=body, headers=bearer(key))
    assert r.status_code == 201, r.text
    bought = r.json()
    assert bought["invoice_id"] is not None and bought["charged_cents"] == product["price_cents"]
    invoice = (
        await client.get(f"/api/v1/customer/invoices/{bought['invoice_id']}", headers=bearer(key))
    ).json()
    assert invoice["kind"] == "catalog" and invoice["status"] == "paid"
    assert invoice["service_id"] == bought["service"]["service_id"]
    assert (
        invoice["total_cents"] == product["price_cents"] == sum(x["amount_cents"] for x in invoice["lines"])
    )
    ledger = (await client.get("/api/v1/customer/wallet/ledger", headers=bearer(key))).json()["items"]
    purchase = next(e for e in ledger if e["kind"] == "purchase")
    assert purchase["invoice_id"] == bought["invoice_id"]
    again = (await client.post("/api/v1/customer/services", json=body, headers=bearer(key))).json()
    assert again["created"] is False and again["invoice_id"] is None
    listed = (await client.get("/api/v1/customer/invoices", headers=bearer(key))).json()
    assert [i["invoice_id"] for i in listed["items"] if i["kind"] == "catalog"] == [bought["invoice_id"]]
