"""products, products/orderby/{field}, product GET/POST: exact bodies, errors, legacy <-> v1."""

from __future__ import annotations

from datetime import UTC, datetime

import httpx
import pytest

from proxyplane.domains.legacy.products import smallest_order
from proxyplane.platform import Platform
from tests.adapters.legacy.support import (
    JSON,
    PRODUCT_FIELDS,
    add_product,
    auth,
    buy,
    rotating_product,
    static_product,
)
from tests.domains.stock.support import fresh_stock
from tests.support import Account, bearer

pytestmark = pytest.mark.anyio
FIELDS = ("productId", "productName", "price", "groupId", "groupName", "created_at")


async def test_catalog_product_get_and_in_list(
    client: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    when = datetime(2031, 5, 17, 8, 0, tzinfo=UTC)
    config = {"plan": "requests", "quota_requests": 10, "exit_pool": "proxy_datacenter"}
    pid, product = await add_product(platform, "proxy_rotating", 1999, config, created_at=when)
    r = await client.get(f"/api/product/{pid}", headers=auth(account))
    assert (r.status_code, r.headers["content-type"]) == (200, JSON)
    assert (
        r.content
        == (
            f'{{"productId":{pid},"price":19.99,"groupId":4,"groupName":"Rotating proxies",'
            '"created_at":"2031-05-17","product_hidden":false,"group_hidden":false,"product_type":"ppr"}'
        ).encode()
    )
    listed = await client.get("/api/products", headers=auth(account))
    item = (
        f'{{"productId":{pid},"productName":"{product.name}","price":19.99,"groupId":4,'
        '"groupName":"Rotating proxies","created_at":"2031-05-17"}'
    ).encode()
    assert item in listed.content
    ids = [p["productId"] for p in listed.json()]
    assert ids == sorted(ids)


async def test_static_product_fields(client: httpx.AsyncClient, platform: Platform, account: Account) -> None:
    pid, product = await static_product(platform, ips=2)
    got = (await client.get(f"/api/product/{pid}", headers=auth(account))).json()
    assert got["product_type"] == "fpr" and got["ip_count"] == 2 and got["geo"] == ["MD"]
    assert got["groupId"] == 1 and got["groupName"] == "Datacenter proxies" and got["price"] == 2.5
    assert len(got["update_time"]) == 19 and got["update_time"][4] == "-" and got["update_time"][13] == ":"
    assert list(got) == PRODUCT_FIELDS


async def test_composite_product_is_the_smallest_order(
    client: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    await fresh_stock(platform, "proxy_isp", "MD", 40)
    async with platform.db.unit_of_work(write=False) as uow:
        offer = await smallest_order(uow.session, "proxy_isp", 0)
    assert offer is not None
    got = (await client.get("/api/product/2", headers=auth(account))).json()
    count, _, price = offer
    assert got["productId"] == 2 and got["groupName"] == "ISP proxies" and got["ip_count"] == count
    assert round(got["price"] * 100) == price


@pytest.mark.parametrize("field", FIELDS)
async def test_orderby(client: httpx.AsyncClient, platform: Platform, account: Account, field: str) -> None:
    await rotating_product(platform)
    r = await client.get(f"/api/products/orderby/{field}", headers=auth(account))
    assert (r.status_code, r.headers["content-type"]) == (200, JSON)
    items = r.json()
    keys = [(p[field], p["productId"]) for p in items]
    assert keys == sorted(keys)
    plain = (await client.get("/api/products", headers=auth(account))).json()
    assert sorted(p["productId"] for p in plain) == sorted(p["productId"] for p in items)


@pytest.mark.parametrize("field", ["name", "productid", "description", "price;drop", "updated_at"])
async def test_orderby_other_fields_422(client: httpx.AsyncClient, account: Account, field: str) -> None:
    r = await client.get(f"/api/products/orderby/{field}", headers=auth(account))
    assert (r.status_code, r.content, r.headers["content-type"]) == (
        422,
        b'{"error":"Unprocessable Entity"}',
        JSON,
    )


@pytest.mark.parametrize("pid", ["0", "4", "99", "abc", "99999999", "-1"])
async def test_get_unknown_product(client: httpx.AsyncClient, account: Account, pid: str) -> None:
    r = await client.get(f"/api/product/{pid}", headers=auth(account))
    assert (r.status_code, r.content) == (422, b'{"error":"Unprocessable Entity or product ID not found"}')


async def test_post_product_creates_service_seen_in_v1(
    client: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    await account.credit(1_000)
    pid, product = await static_product(platform, ips=2)
    r = await client.post(
        f"/api/product/{pid}",
        json={"clientid": str(account.customer_id), "setip": "192.0.2.10"},  # as PHP forms send it
        headers=auth(account),
    )
    assert (r.status_code, r.headers["content-type"]) == (200, JSON)
    made = r.json()
    key = await account.key()
    v1 = (await client.get("/api/v1/customer/services", headers=bearer(key))).json()["items"]
    svc = next(s for s in v1 if s["service_number"] == made["serviceId"])
    assert svc["status"] == "active" and svc["product_id"] == str(product.product_id)
    assert svc["whitelist_ips"] == ["192.0.2.10"] and svc["ip_count"] == 2
    assert (
        r.content
        == (
            f'{{"serviceId":{svc["service_number"]},"orderId":{svc["service_number"]},'
            f'"invoiceId":{made["invoiceId"]},"amount":2.50,"ip":"{svc["ips"][0]["ip"]}"}}'
        ).encode()
    )
    balance = (await client.get("/api/v1/customer/wallet/balance", headers=bearer(key))).json()
    assert balance["balance_cents"] == 750
    assert (await client.get("/api/billing/credit", headers=auth(account))).content == b'{"credit":7.50}'


async def test_post_rotating_product(client: httpx.AsyncClient, platform: Platform, account: Account) -> None:
    await account.credit(1_000)
    pid, _ = await rotating_product(platform)
    made = await buy(client, account, pid, setip=None)
    assert made["amount"] == 4.0 and made["ip"] == "127.0.0.1"


async def test_post_product_errors(client: httpx.AsyncClient, platform: Platform, account: Account) -> None:
    pid, _ = await static_product(platform)
    client_err = b'{"error":"Unprocessable Entity. ClientID not found"}'
    for body in (
        {},
        {"clientid": account.customer_id + 1},
        {"clientid": str(account.customer_id + 1)},
        {"clientid": f" {account.customer_id}"},
        {"clientid": True},
        {"clientid": float(account.customer_id)},
    ):
        r = await client.post(f"/api/product/{pid}", json=body, headers=auth(account))
        assert (r.status_code, r.content) == (422, client_err)
    generic = b'{"error":"Unprocessable Entity"}'
    # no credit: nothing is bought
    r = await client.post(
        f"/api/product/{pid}", json={"clientid": account.customer_id}, headers=auth(account)
    )
    assert (r.status_code, r.content) == (422, generic)
    assert (await client.get("/api/services", headers=auth(account))).content == b"[]"
    await account.credit(1_000)
    for bad_pid in ("99999999", "abc"):
        r = await client.post(
            f"/api/product/{bad_pid}", json={"clientid": account.customer_id}, headers=auth(account)
        )
        assert (r.status_code, r.content) == (422, generic)
    r = await client.post(
        f"/api/product/{pid}", json={"clientid": account.customer_id, "setip": "1.2.3"}, headers=auth(account)
    )
    assert (r.status_code, r.content) == (422, generic)
    r = await client.post(f"/api/product/{pid}", content=b"{not json", headers=auth(account))
    assert (r.status_code, r.content) == (422, generic)
    assert (await client.get("/api/billing/credit", headers=auth(account))).content == b'{"credit":10.00}'


async def test_post_composite_product(
    client: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    await fresh_stock(platform, "proxy_isp", "MD", 40)
    got = (await client.get("/api/product/2", headers=auth(account))).json()
    generic = b'{"error":"Unprocessable Entity"}'
    r = await client.post(
        "/api/product/2", json={"clientid": account.customer_id, "setip": "192.0.2.1"}, headers=auth(account)
    )
    assert (r.status_code, r.content) == (422, generic)  # no credit: no checkout is opened, nothing bought
    assert (await client.get("/api/services", headers=auth(account))).content == b"[]"
    await account.credit(10_000)
    r = await client.post("/api/product/2", json={"clientid": account.customer_id}, headers=auth(account))
    assert r.status_code == 422  # a composite order needs the IP to bind, and the error says so
    assert r.content == (
        b'{"error":"Unprocessable Entity. setip is required: the IPv4 address to bind (whitelist) '
        b'for this product"}'
    )
    made = await buy(client, account, 2, setip="192.0.2.1")
    assert made["amount"] == got["price"]
    svc = (await client.get(f"/api/service/{made['serviceId']}", headers=auth(account))).json()
    assert svc["ip_count"] == got["ip_count"] and svc["bindedip"] == "192.0.2.1" and svc["status"] == "Active"
