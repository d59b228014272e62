"""IPv6 from routed prefixes over REST (issue 16): countries, pricing-info, quote and order of proxy_ipv6
(one /64 per unit), the service's subnets in the service and proxy/ips, the pinned mode inside the subnet,
cancellation releasing the subnets."""

from __future__ import annotations

import ipaddress
import uuid

import httpx
import pytest

from proxyplane.platform import Platform
from tests.domains.stock.subnet_support import fresh_prefix, retire_country
from tests.support import Account, bearer

pytestmark = pytest.mark.anyio
API = "/api/v1"


async def free_in(client: httpx.AsyncClient, country: str) -> int:
    r = await client.get(f"{API}/billing/countries?product_kind=proxy_ipv6")
    assert r.status_code == 200, r.text
    return next((c["available_ips"] for c in r.json()["countries"] if c["code"] == country), 0)


async def test_buy_list_pin_cancel(client: httpx.AsyncClient, platform: Platform, account: Account) -> None:
    prefix = await fresh_prefix(platform, "EE", length=60)  # 16 /64s
    assert await free_in(client, "EE") == 16
    info = (await client.get(f"{API}/billing/composite/pricing-info")).json()["products"]["proxy_ipv6"]
    assert [t["months"] for t in info["term_discounts"]] == [1, 3, 6, 12] and info["base_price_cents"] > 0

    q = {"product_kind": "proxy_ipv6", "period_months": 3, "segments": [{"country": "EE", "count": 2}]}
    quote = (await client.post(f"{API}/billing/composite/quote", json=q)).json()
    assert quote["ip_count"] == 2 and quote["errors"] == [], quote
    key = await account.key()
    await account.credit(10_000)
    order = {
        **q,
        "geo_source": "maxmind",
        "whitelist_ips": ["127.0.0.9"],
        "use_balance": True,
        "idempotency_key": uuid.uuid4().hex,
    }
    r = await client.post(f"{API}/billing/composite/order", json=order, headers=bearer(key))
    assert r.status_code == 201, r.text
    assert r.json()["total_cents"] == quote["total_cents"]
    svc = r.json()["service"]
    held = [i["ip"] for i in svc["ips"]]
    assert svc["product_kind"] == "proxy_ipv6" and svc["ip_count"] == 2 and len(set(held)) == 2
    net = ipaddress.IPv6Network(prefix)
    assert all(
        ipaddress.IPv6Network(s).prefixlen == 64 and ipaddress.IPv6Network(s).subnet_of(net) for s in held
    )
    assert await free_in(client, "EE") == 14
    base = f"{API}/customer/services/{svc['service_id']}"
    got = (await client.get(base, headers=bearer(key))).json()
    assert [i["ip"] for i in got["ips"]] == held
    listed = (await client.get(f"{API}/customer/services", headers=bearer(key))).json()["items"]
    assert [i["ip"] for i in next(s for s in listed if s["service_id"] == svc["service_id"])["ips"]] == held

    eps = (await client.get(f"{base}/proxy/ips", headers=bearer(key))).json()["endpoints"]
    assert [e["ip"] for e in eps] == held and all(":" in e["http"] and e["country"] == "EE" for e in eps)

    pin = str(ipaddress.IPv6Network(held[1])[0x1234])
    r = await client.put(
        f"{base}/proxy/sticky/mode", json={"mode": "pinned", "pin": pin}, headers=bearer(key)
    )
    assert r.status_code == 200 and r.json()["pin"] == pin, r.text
    outside = str(net.network_address + (1 << 80))  # another /48 altogether
    r = await client.put(
        f"{base}/proxy/sticky/mode", json={"mode": "pinned", "pin": outside}, headers=bearer(key)
    )
    assert r.status_code == 422 and "not inside" in r.text
    r = await client.put(f"{base}/proxy/sticky/mode", json={"mode": "sticky"}, headers=bearer(key))
    assert r.status_code == 200 and r.json()["mode"] == "sticky"

    r = await client.post(f"{base}/proxy/refresh", json={"idempotency_key": "v6"}, headers=bearer(key))
    assert r.status_code == 200, r.text
    fresh = [x["new"] for x in r.json()["replaced"]]
    assert [x["old"] for x in r.json()["replaced"]] == held and not set(fresh) & set(held)
    assert all(ipaddress.IPv6Network(s).subnet_of(net) for s in fresh)
    eps = (await client.get(f"{base}/proxy/ips", headers=bearer(key))).json()["endpoints"]
    assert sorted(e["ip"] for e in eps) == sorted(fresh)
    assert await free_in(client, "EE") == 14  # 4 handed out from the cursor, the 2 old ones free again

    r = await client.post(f"{base}/cancel", headers=bearer(key))
    assert r.status_code == 200, r.text
    assert await free_in(client, "EE") == 16  # both subnets released, sold again before the cursor moves
    await retire_country(platform, "EE")  # auto-plan tests split over every country with free subnets
