"""Buy page and service page: each action runs the REST operation; the API then shows the same data."""

from __future__ import annotations

import json
import re

import httpx
import pytest

from proxyplane.platform import Platform
from tests.adapters.web.helpers import csrf_of, follow, post_form, signup
from tests.adapters.web.test_pages import api_key, customer_id
from tests.domains.stock.support import fresh_stock
from tests.support import Account, bearer

pytestmark = pytest.mark.anyio
COUNTRY = "PT"


async def buyer(client: httpx.AsyncClient, platform: Platform, cents: int) -> tuple[Account, str]:
    email = await signup(client)
    account = Account(platform, await customer_id(platform, email), email, "")
    if cents:
        await account.credit(cents)
    return account, await api_key(client, ["services:read", "services:write", "wallet:read", "catalog:read"])


async def buy(
    client: httpx.AsyncClient, count: int = 8, use_balance: str = "1", country: str = COUNTRY
) -> httpx.Response:
    return await post_form(
        client,
        "/buy",
        "/buy",
        {
            "product_kind": "proxy_datacenter",
            "geo_source": "maxmind",
            "period_months": "1",
            f"n_{country}": str(count),
            "whitelist": "127.0.0.5",
            "use_balance": use_balance,
            "payment_method": "card",
            "idempotency_key": f"web-{count}-{use_balance}-{id(client)}",
        },
    )


async def test_buy_page_lists_live_availability_and_quotes(
    client: httpx.AsyncClient, platform: Platform
) -> None:
    await fresh_stock(platform, "proxy_datacenter", COUNTRY, 7)
    await buyer(client, platform, 0)
    page = await client.get("/buy?product_kind=proxy_datacenter&geo_source=maxmind")
    assert page.status_code == 200
    row = re.search(
        rf"<td>[^<]*<span class=\"muted\">{COUNTRY}</span></td><td class=\"num\">(\d+)</td>", page.text
    )
    assert row and int(row.group(1)) == 7
    panel = await client.get(f"/buy/quote?product_kind=proxy_datacenter&period_months=3&n_{COUNTRY}=4")
    rest = await client.post(
        "/api/v1/billing/composite/quote",
        json={
            "product_kind": "proxy_datacenter",
            "period_months": 3,
            "segments": [{"country": COUNTRY, "count": 4}],
        },
    )
    total = rest.json()["total_cents"]
    assert f"${total // 100:,}.{total % 100:02d}" in panel.text
    too_many = await client.get(f"/buy/quote?product_kind=proxy_datacenter&period_months=1&n_{COUNTRY}=99")
    assert 'class="error"' in too_many.text


async def test_auto_plan_fills_counts(client: httpx.AsyncClient, platform: Platform) -> None:
    await fresh_stock(platform, "proxy_datacenter", COUNTRY, 9)
    await buyer(client, platform, 0)
    r = await post_form(
        client,
        "/buy",
        "/buy/auto-plan",
        {"product_kind": "proxy_datacenter", "geo_source": "maxmind", "total_ips": "2"},
    )
    assert r.status_code == 200
    assert re.search(r'name="n_[A-Z]{2}" value="\d+"', r.text)


async def test_order_from_wallet_then_manage_the_service(
    client: httpx.AsyncClient, platform: Platform
) -> None:
    await fresh_stock(platform, "proxy_datacenter", COUNTRY, 10)
    _, key = await buyer(client, platform, 50_000)
    r = await buy(client)
    assert r.status_code == 303, r.text
    url = r.headers["location"]
    sid = url.rsplit("/", 1)[1]
    svc = (await client.get(f"/api/v1/customer/services/{sid}", headers=bearer(key))).json()
    assert svc["ip_count"] == 8 and svc["whitelist_ips"] == ["127.0.0.5"]
    page = await client.get(url)
    assert page.status_code == 200 and "Order" in page.text
    ips = (await client.get(f"/api/v1/customer/services/{sid}/proxy/ips", headers=bearer(key))).json()
    for e in ips["endpoints"]:
        assert e["http"] in page.text
    auth = (
        await client.get(f"/api/v1/customer/services/{sid}/proxy/auth?reveal=true", headers=bearer(key))
    ).json()

    txt = await client.get(f"{url}/endpoints.txt?format=login_password_at_ip_port&protocol=http")
    assert txt.text.splitlines() == [
        f"{auth['login']}:{auth['password']}@{e['http']}" for e in ips["endpoints"]
    ]
    assert "attachment" in txt.headers["content-disposition"]
    csv_body = await client.get(f"{url}/endpoints.csv?format=ip_port_login_password&protocol=socks5")
    assert csv_body.text.splitlines()[1] == (
        f"{ips['endpoints'][0]['country']},{ips['endpoints'][0]['socks5']}:{auth['login']}:{auth['password']}"
    )
    as_json = await client.get(f"{url}/endpoints.json?format=ip_port&protocol=http")
    assert json.loads(as_json.text) == [e["http"] for e in ips["endpoints"]]

    revealed = await post_form(client, url, f"{url}/credentials", {"do": "reveal"})
    assert auth["password"] in revealed.text
    rotated = await follow(
        client,
        await post_form(client, url, f"{url}/credentials", {"do": "rotate", "rotation_key": "web-rot-1"}),
    )
    new = (
        await client.get(f"/api/v1/customer/services/{sid}/proxy/auth?reveal=true", headers=bearer(key))
    ).json()
    assert new["password"] != auth["password"] and new["password"] in rotated.text
    assert new["password"] not in (await client.get(url)).text  # a reload shows it masked again

    added = await post_form(client, url, f"{url}/whitelist", {"do": "add", "ip": "127.0.0.6"})
    assert added.status_code == 303
    wl = f"/api/v1/customer/services/{sid}/proxy/whitelist"
    assert (await client.get(wl, headers=bearer(key))).json()["ips"] == ["127.0.0.5", "127.0.0.6"]
    bad = await post_form(client, url, f"{url}/whitelist", {"do": "add", "ip": "10.0.0.0/8"})
    assert bad.status_code == 422 and 'class="error"' in bad.text
    await post_form(client, url, f"{url}/whitelist", {"do": "remove", "ip": "127.0.0.5"})
    assert (await client.get(wl, headers=bearer(key))).json()["ips"] == ["127.0.0.6"]

    toggled = await post_form(client, url, f"{url}/auto-renew", {"auto_renew": "on"})
    assert toggled.status_code == 303
    assert (await client.get(f"/api/v1/customer/services/{sid}", headers=bearer(key))).json()[
        "auto_renew"
    ] is True

    renewed = await post_form(
        client, url, f"{url}/renew", {"period_months": "1", "idempotency_key": "web-renew-1"}
    )
    assert renewed.status_code == 303
    after = (await client.get(f"/api/v1/customer/services/{sid}", headers=bearer(key))).json()
    assert after["expires_at"] > svc["expires_at"]

    confirm = await client.get(f"{url}/cancel")
    assert confirm.status_code == 200
    shown_refund = re.search(r'id="refund-total">\$([\d,]+)\.(\d\d)<', confirm.text)
    assert shown_refund, confirm.text
    preview = int(shown_refund.group(1).replace(",", "")) * 100 + int(shown_refund.group(2))
    cancelled = await client.post(f"{url}/cancel", data={"csrf": csrf_of(confirm)})
    assert cancelled.status_code == 303
    ledger = (await client.get("/api/v1/customer/wallet/ledger", headers=bearer(key))).json()["items"]
    assert ledger[0]["kind"] == "refund" and 0 <= preview - ledger[0]["amount_cents"] <= 1
    assert preview > 0
    shown = await client.get(url)
    assert "refunded to your wallet" in shown.text
    again = await client.get(f"{url}/cancel")
    assert "nothing left to cancel" in again.text
    listing = await client.get("/services")
    assert sid in listing.text


async def test_order_short_balance_goes_to_checkout(client: httpx.AsyncClient, platform: Platform) -> None:
    await fresh_stock(platform, "proxy_datacenter", COUNTRY, 10)
    await buyer(client, platform, 100)
    r = await buy(client)
    assert r.status_code == 303
    assert "/checkout/test/" in r.headers["location"]


async def test_order_errors_shown_on_the_page(client: httpx.AsyncClient, platform: Platform) -> None:
    await fresh_stock(platform, "proxy_datacenter", COUNTRY, 2)
    await buyer(client, platform, 50_000)
    r = await buy(client, count=5)
    assert r.status_code in (409, 422)
    assert 'class="error"' in r.text


async def test_foreign_or_bad_service_ids_are_not_found(client: httpx.AsyncClient) -> None:
    await signup(client)
    assert (await client.get("/services/not-a-uuid")).status_code == 404
    assert (await client.get("/services/00000000-0000-0000-0000-000000000000")).status_code == 404
