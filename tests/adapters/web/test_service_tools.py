"""Service page tools: add IPs (quote, then confirm), IP refresh (free, then paid; a changed price is not
charged), add-ons (buy at the shown price, cancel with refund), sticky sessions of a rotating service, and
the usage panel's destinations and error categories. The REST API then shows the same state."""

from __future__ import annotations

import re
import uuid

import httpx
import pytest
from sqlalchemy import select

from proxyplane.domains.stock.seed import seed_demo
from proxyplane.platform import Platform
from proxyplane.storage.models.subusers import ServiceSubuser
from tests.adapters.legacy.test_sticky import _session
from tests.adapters.web.helpers import post_form
from tests.adapters.web.test_buy_and_services import buy, buyer
from tests.domains.stock.support import fresh_stock
from tests.support import bearer

pytestmark = pytest.mark.anyio

# a country of its own: fresh_stock retires every live datacenter IP of its country, and the buying tests
# of test_buy_and_services.py use theirs (PT) at the same time under a parallel run
COUNTRY = "HU"


def cents(text: str, element_id: str) -> int:
    found = re.search(rf'id="{element_id}">\$([\d,]+)\.(\d\d)<', text)
    assert found, element_id
    return int(found.group(1).replace(",", "")) * 100 + int(found.group(2))


async def test_add_ips_refresh_and_addons(client: httpx.AsyncClient, platform: Platform) -> None:
    await fresh_stock(platform, "proxy_datacenter", COUNTRY, 24)
    account, _ = await buyer(client, platform, 50_000)
    key = await account.key()
    bought = await buy(client, count=8, country=COUNTRY)
    url = bought.headers["location"]
    sid = url.rsplit("/", 1)[1]
    api = f"/api/v1/customer/services/{sid}"
    auth = bearer(key)

    # add IPs: the quote page shows the REST quote's charge; confirming adds them and charges that
    quoted = await post_form(client, url, f"{url}/add-ips/quote", {"country": COUNTRY, "count": "2"})
    assert quoted.status_code == 200, quoted.text
    rest = await client.post(
        f"/api/v1/billing/services/{sid}/add-ips/quote",
        json={"segments": [{"country": COUNTRY, "count": 2}]},
        headers=auth,
    )
    assert cents(quoted.text, "add-ips-charge") == rest.json()["charge_cents"]
    before = (await client.get("/api/v1/customer/wallet/balance", headers=auth)).json()["balance_cents"]
    added = await post_form(
        client, url, f"{url}/add-ips", {"country": COUNTRY, "count": "2", "idempotency_key": "web-add-1"}
    )
    assert added.status_code == 303, added.text
    assert (await client.get(api, headers=auth)).json()["ip_count"] == 10
    after = (await client.get("/api/v1/customer/wallet/balance", headers=auth)).json()["balance_cents"]
    assert before - after == rest.json()["charge_cents"]
    too_many = await post_form(client, url, f"{url}/add-ips/quote", {"country": COUNTRY, "count": "500"})
    assert too_many.status_code in (409, 422) and 'class="error"' in too_many.text

    # refresh: free first, then paid; a stale "free" form is not charged
    page = await client.get(url)
    assert 'id="refresh-price">Free<' in page.text
    old_ips = (await client.get(f"{api}/proxy/ips", headers=auth)).json()["endpoints"]
    done = await post_form(client, url, f"{url}/refresh", {"expected_cents": "0", "idempotency_key": "r1"})
    assert done.status_code == 303, done.text
    new_ips = (await client.get(f"{api}/proxy/ips", headers=auth)).json()["endpoints"]
    assert {e["http"] for e in new_ips} != {e["http"] for e in old_ips}
    status = (await client.get(f"{api}/proxy/refresh-status", headers=auth)).json()
    assert status["free"] is False
    page = await client.get(url)
    assert cents(page.text, "refresh-price") == status["full_refresh_price_cents"]
    balance = (await client.get("/api/v1/customer/wallet/balance", headers=auth)).json()["balance_cents"]
    stale = await post_form(client, url, f"{url}/refresh", {"expected_cents": "0", "idempotency_key": "r2"})
    assert stale.status_code == 409 and "price changed" in stale.text
    assert (await client.get("/api/v1/customer/wallet/balance", headers=auth)).json()[
        "balance_cents"
    ] == balance

    # add-ons: bought at the shown price, listed, cancelled with a refund
    offers = (await client.get(f"/api/v1/billing/services/{sid}/addons/available", headers=auth)).json()
    offer = offers["items"][0]
    assert f'value="{offer["price_cents"]}"' in page.text
    r = await post_form(
        client,
        url,
        f"{url}/addons",
        {"addon_type": offer["addon_type"], "max_total_cents": str(offer["price_cents"] - 1)},
    )
    assert r.status_code == 409 and 'class="error"' in r.text  # not the current price: nothing bought
    r = await post_form(
        client,
        url,
        f"{url}/addons",
        {"addon_type": offer["addon_type"], "max_total_cents": str(offer["price_cents"])},
    )
    assert r.status_code == 303, r.text
    active = (await client.get(f"/api/v1/billing/services/{sid}/addons", headers=auth)).json()["items"]
    assert [a["addon_type"] for a in active] == [offer["addon_type"]]
    r = await post_form(client, url, f"{url}/addons/{active[0]['addon_id']}/cancel", {})
    assert r.status_code == 303
    flash = await client.get(r.headers["location"])
    assert "refunded to your wallet" in flash.text
    assert (await client.get(f"/api/v1/billing/services/{sid}/addons", headers=auth)).json()["items"] == []


async def test_rotating_sessions_and_usage_panels(client: httpx.AsyncClient, platform: Platform) -> None:
    async with platform.db.unit_of_work() as uow:
        await seed_demo(uow.session)
        await uow.commit()
    await fresh_stock(platform, "proxy_datacenter", "MD", 4)
    _, key = await buyer(client, platform, 5_000)
    catalog = (await client.get("/api/v1/customer/catalog?limit=100", headers=bearer(key))).json()["items"]
    product = next(p for p in catalog if p["name"] == "Rotating datacenter: 10 GB")
    r = await post_form(client, "/catalog", f"/catalog/{product['product_id']}", {"idempotency_key": "rot"})
    url = r.headers["location"]
    sid = url.rsplit("/", 1)[1]
    api = f"/api/v1/customer/services/{sid}/proxy/sticky"
    auth = bearer(key)
    page = await client.get(url)
    assert 'id="sticky"' in page.text and "No live sticky sessions" in page.text
    assert 'id="destinations"' in page.text and "No traffic in this window" in page.text

    r = await post_form(client, url, f"{url}/sticky", {"do": "mode", "mode": "sticky"})
    assert r.status_code == 303
    r = await post_form(client, url, f"{url}/sticky", {"do": "ttl", "ttl_minutes": "10"})
    assert r.status_code == 303
    mode = (await client.get(f"{api}/mode", headers=auth)).json()
    assert (mode["mode"], mode["ttl_minutes"]) == ("sticky", 10)
    bad = await post_form(client, url, f"{url}/sticky", {"do": "ttl", "ttl_minutes": "1441"})
    assert bad.status_code == 422 and 'class="error"' in bad.text

    exit_ip = "127.0.0.1"  # rows as the gateway node writes them
    await _session(platform, sid, "alpha", exit_ip)
    await _session(platform, sid, "beta", exit_ip)
    # a sub-user's session of the same sid (issue 18), stored as the gateway writes it: "<pk>:<sid>"
    made = await client.post(f"/api/v1/customer/services/{sid}/subusers", json={}, headers=auth)
    assert made.status_code == 201, made.text
    subuser_id = made.json()["subuser_id"]
    async with platform.db.unit_of_work(write=False) as uow:
        found = await uow.session.execute(
            select(ServiceSubuser.id).where(ServiceSubuser.subuser_id == uuid.UUID(subuser_id))
        )
        pk = found.scalar_one()
    await _session(platform, sid, f"{pk}:alpha", exit_ip)
    page = await client.get(url)
    assert "<code>alpha</code>" in page.text and "<code>beta</code>" in page.text
    assert page.text.count("<code>alpha</code>") == 2 and f'value="{subuser_id}"' in page.text
    r = await post_form(
        client, url, f"{url}/sticky", {"do": "rotate", "sid": "alpha", "subuser_id": subuser_id}
    )
    assert r.status_code == 303
    r = await post_form(
        client, url, f"{url}/sticky", {"do": "delete", "sid": "alpha", "subuser_id": subuser_id}
    )
    assert r.status_code == 303
    live = (await client.get(f"{api}/sessions", headers=auth)).json()["sessions"]
    assert sorted((s["sid"], s["subuser_id"]) for s in live) == [("alpha", None), ("beta", None)]
    r = await post_form(client, url, f"{url}/sticky", {"do": "delete", "sid": "alpha"})
    assert r.status_code == 303
    live = (await client.get(f"{api}/sessions", headers=auth)).json()["sessions"]
    assert [s["sid"] for s in live] == ["beta"]
    r = await post_form(client, url, f"{url}/sticky", {"do": "purge"})
    assert r.status_code == 303
    assert (await client.get(f"{api}/sessions", headers=auth)).json()["sessions"] == []
