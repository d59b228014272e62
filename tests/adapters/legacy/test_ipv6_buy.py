"""Buying IPv6 on the legacy API (issue 16): composite product 5 (group 5 "IPv6 proxies") is the smallest
1-month proxy_ipv6 order in the country with the most free subnets; POST /api/product/5 buys it from the
credit, `ip` of the result is the first subnet (CIDR), and the service reads as an fpr service whose
ip_count counts subnets."""

from __future__ import annotations

import ipaddress

import httpx
import pytest

from proxyplane.platform import Platform
from tests.adapters.legacy.support import JSON, PRODUCT_FIELDS, auth, buy
from tests.domains.stock.subnet_support import fresh_prefix, retire_country
from tests.support import Account, bearer

pytestmark = pytest.mark.anyio


async def test_buy_ipv6_composite_product(
    client: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    try:
        await _run_buy_ipv6_composite_product(client, platform, account)
    finally:
        await retire_country(platform, "RS")


async def _run_buy_ipv6_composite_product(
    client: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    await fresh_prefix(platform, "RS")  # a /48: IPv6 stock exists whatever the other tests left
    r = await client.get("/api/product/5", headers=auth(account))
    assert (r.status_code, r.headers["content-type"]) == (200, JSON)
    got = r.json()
    assert list(got) == PRODUCT_FIELDS
    assert (got["productId"], got["groupId"], got["groupName"]) == (5, 5, "IPv6 proxies")
    assert got["product_type"] == "fpr" and got["product_hidden"] is False and "RS" in got["geo"]
    assert got["ip_count"] >= 1 and got["price"] > 0
    listed = (await client.get("/api/products", headers=auth(account))).json()
    item = next(p for p in listed if p["productId"] == 5)
    assert item["productName"].startswith("IPv6 proxies: ") and "subnet" in item["productName"]
    assert item["price"] == got["price"]

    await account.credit(100_000)
    made = await buy(client, account, 5, setip="192.0.2.5")
    assert list(made) == ["serviceId", "orderId", "invoiceId", "amount", "ip"]
    assert made["amount"] == got["price"]
    key = await account.key()
    v1 = (await client.get("/api/v1/customer/services", headers=bearer(key))).json()["items"]
    svc = next(s for s in v1 if s["service_number"] == made["serviceId"])
    subnets = [i["ip"] for i in svc["ips"]]
    assert svc["product_kind"] == "proxy_ipv6" and svc["status"] == "active"
    assert len(subnets) == got["ip_count"] and made["ip"] == subnets[0]
    assert all(ipaddress.IPv6Network(s).num_addresses > 1 for s in subnets)
    assert {i["country"] for i in svc["ips"]} <= set(got["geo"])

    legacy = (await client.get(f"/api/service/{made['serviceId']}", headers=auth(account))).json()
    assert legacy["product_type"] == "fpr" and legacy["ip_count"] == got["ip_count"]
    assert legacy["bindedip"] == "192.0.2.5" and legacy["status"] == "Active"
    assert legacy["product_name"] == item["productName"].removesuffix(", 1 month")
    listing = await client.get(f"/api/iplist/http-ip/txt/{made['serviceId']}", headers=auth(account))
    assert listing.text == "".join(s + "\r\n" for s in subnets)
    credit = (await client.get("/api/billing/credit", headers=auth(account))).json()["credit"]
    assert round(credit * 100) == 100_000 - round(got["price"] * 100)

    r = await client.put(
        f"/api/service/{made['serviceId']}", json={"update_list": "true"}, headers=auth(account)
    )
    assert (r.status_code, r.content) == (200, b'{"update_list":"IP list updated successfully"}')
    listing = await client.get(f"/api/iplist/http-ip/txt/{made['serviceId']}", headers=auth(account))
    fresh = listing.text.split()
    assert len(fresh) == len(subnets) and not set(fresh) & set(subnets)  # new subnets of the same country
