"""Issue 30.12: the demo catalog sells IPv6 (seed_demo adds routed prefixes in 3fff::/20 and a product of
/64s; a customer buys it like any catalog product), and `proxyplane admin product add --kind proxy_ipv6`
creates an IPv6 product."""

from __future__ import annotations

import json
import uuid

import httpx
import pytest

from proxyplane.domains.stock.seed import seed_demo
from proxyplane.platform import Platform
from tests.cli.test_admin import cli  # noqa: F401  (fixture)
from tests.support import Account, bearer


async def _seed(platform: Platform) -> dict[str, int]:
    async with platform.db.unit_of_work() as uow:
        added = await seed_demo(uow.session)
        await uow.commit()
    return added


@pytest.mark.anyio
async def test_the_demo_catalog_sells_ipv6(
    client: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    await _seed(platform)
    again = await _seed(platform)
    assert again["ipv6_products"] == 0  # seeding twice adds nothing new
    key = await account.key()
    await account.credit(10_000)
    items = (await client.get("/api/v1/customer/catalog?limit=100", headers=bearer(key))).json()["items"]
    product = next(p for p in items if p["kind"] == "proxy_ipv6")
    spec = (await client.get("/api/v1/openapi.json")).json()  # the response schema says it can be
    assert "proxy_ipv6" in spec["components"]["schemas"]["ProductOut"]["properties"]["kind"]["enum"]
    countries = (await client.get("/api/v1/billing/countries?product_kind=proxy_ipv6")).json()
    assert "DE" in json.dumps(countries), countries
    body = {
        "product_id": product["product_id"],
        "parameters": {"country": "DE"},
        "idempotency_key": uuid.uuid4().hex,
    }
    r = await client.post("/api/v1/customer/services", json=body, headers=bearer(key))
    assert r.status_code == 201, r.text
    svc = r.json()["service"]
    assert svc["product_kind"] == "proxy_ipv6" and svc["ip_count"] == 5 and svc["status"] == "active"
    ips = await client.get(f"/api/v1/customer/services/{svc['service_id']}/proxy/ips", headers=bearer(key))
    assert ips.status_code == 200, ips.text
    assert "3fff:0:6:" in ips.text


def test_admin_product_add_takes_proxy_ipv6(cli) -> None:  # noqa: F811
    name = f"IPv6 test {uuid.uuid4().hex[:6]}"
    config = json.dumps({"ip_count": 2, "country": "DE"})
    code, out, err = cli(
        "admin",
        "product",
        "add",
        "--name",
        name,
        "--kind",
        "proxy_ipv6",
        "--price-cents",
        "90",
        "--config",
        config,
    )
    assert code == 0, err
    assert json.loads(out)["kind"] == "proxy_ipv6"
    code, out, _ = cli("admin", "product", "list")
    assert code == 0 and name in out
