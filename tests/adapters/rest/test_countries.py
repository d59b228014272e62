"""GET /billing/countries and GET /billing/composite/pricing-info."""

import httpx
import pytest

from proxyplane.domains.pricing import DEFAULT_PRICEBOOKS
from proxyplane.platform import Platform
from tests.domains.stock.support import fresh_stock

pytestmark = pytest.mark.anyio


async def test_countries_sorted_with_numeric_ids_per_geo_source(
    client: httpx.AsyncClient, platform: Platform
) -> None:
    await fresh_stock(platform, "proxy_isp", "LU", 4, ripe_country="BE")
    r = await client.get("/api/v1/billing/countries?product_kind=proxy_isp")
    assert r.status_code == 200
    rows = r.json()["countries"]
    counts = [c["available_ips"] for c in rows]
    assert counts == sorted(counts, reverse=True) and all(n > 0 for n in counts)
    lu = next(c for c in rows if c["code"] == "LU")
    assert lu["numeric_id"] == 442 and lu["available_ips"] == 4
    ripe = (await client.get("/api/v1/billing/countries?product_kind=proxy_isp&geo_source=ripe")).json()
    assert "LU" not in [c["code"] for c in ripe["countries"]]
    assert next(c for c in ripe["countries"] if c["code"] == "BE")["numeric_id"] == 56
    default = (await client.get("/api/v1/billing/countries")).json()
    assert default["product_kind"] == "proxy_datacenter" and default["geo_source"] == "maxmind"


@pytest.mark.parametrize("q", ["product_kind=proxy_mobile", "geo_source=ip2location"])
async def test_countries_unknown_kind_or_source_422(client: httpx.AsyncClient, q: str) -> None:
    assert (await client.get(f"/api/v1/billing/countries?{q}")).status_code == 422


async def test_pricing_info_live_defaults(client: httpx.AsyncClient) -> None:
    r = await client.get("/api/v1/billing/composite/pricing-info")
    assert r.status_code == 200
    dc = r.json()["products"]["proxy_datacenter"]
    book = DEFAULT_PRICEBOOKS["proxy_datacenter"]
    assert dc["base_price_cents"] == book.base_price_cents
    assert [t["months"] for t in dc["term_discounts"]] == [1, 3, 6, 12]
    assert dc["min_order_cents"] == book.min_order_cents and dc["included_connections_per_ip"] > 0
    assert {a["kind"] for a in dc["addons"]} == {"udp", "extra_whitelist_slots", "extra_connections"}
