"""Dashboard (issue 16): the buy page sells proxy_ipv6 (free /64s per country, a live quote, the order from
the wallet) and the service page shows the service's subnet, its rotating endpoint and the countries of
its prefixes."""

from __future__ import annotations

import ipaddress
import re

import httpx
import pytest

from proxyplane.platform import Platform
from tests.adapters.web.helpers import post_form
from tests.adapters.web.test_buy_and_services import buyer
from tests.domains.stock.subnet_support import fresh_prefix, retire_country
from tests.support import bearer

pytestmark = pytest.mark.anyio
COUNTRY = "LV"


async def test_buy_ipv6_from_the_dashboard(client: httpx.AsyncClient, platform: Platform) -> None:
    try:
        await _run_buy_ipv6_from_the_dashboard(client, platform)
    finally:
        await retire_country(platform, COUNTRY)


async def _run_buy_ipv6_from_the_dashboard(client: httpx.AsyncClient, platform: Platform) -> None:
    prefix = await fresh_prefix(platform, COUNTRY, length=60)  # 16 /64s
    _, key = await buyer(client, platform, 50_000)
    page = await client.get("/buy?product_kind=proxy_ipv6&geo_source=maxmind")
    assert page.status_code == 200 and "IPv6" in page.text
    row = re.search(
        rf"<td>[^<]*<span class=\"muted\">{COUNTRY}</span></td><td class=\"num\">(\d+)</td>", page.text
    )
    assert row and int(row.group(1)) == 16, page.text
    panel = await client.get(f"/buy/quote?product_kind=proxy_ipv6&period_months=1&n_{COUNTRY}=1")
    rest = await client.post(
        "/api/v1/billing/composite/quote",
        json={
            "product_kind": "proxy_ipv6",
            "period_months": 1,
            "segments": [{"country": COUNTRY, "count": 1}],
        },
    )
    total = rest.json()["total_cents"]
    assert f"${total // 100:,}.{total % 100:02d}" in panel.text

    r = await post_form(
        client,
        "/buy?product_kind=proxy_ipv6",
        "/buy",
        {
            "product_kind": "proxy_ipv6",
            "geo_source": "maxmind",
            "period_months": "1",
            f"n_{COUNTRY}": "1",
            "whitelist": "127.0.0.5",
            "use_balance": "1",
            "payment_method": "card",
            "idempotency_key": f"web-v6-{id(client)}",
        },
    )
    assert r.status_code == 303, r.text
    url = r.headers["location"]
    sid = url.rsplit("/", 1)[1]
    svc = (await client.get(f"/api/v1/customer/services/{sid}", headers=bearer(key))).json()
    assert svc["product_kind"] == "proxy_ipv6" and svc["ip_count"] == 1
    subnet = svc["ips"][0]["ip"]
    assert ipaddress.IPv6Network(subnet).subnet_of(ipaddress.IPv6Network(prefix))
    shown = await client.get(url)
    assert shown.status_code == 200
    assert subnet in shown.text, shown.text
    config = (await client.get(f"/api/v1/customer/services/{sid}/proxy/config", headers=bearer(key))).json()
    assert config["countries"] == [COUNTRY.lower()]
    assert f"{config['host']}:{config['http_port']}" in shown.text
