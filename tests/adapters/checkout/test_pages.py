"""The test processor's checkout page says what it pays: an order's remainder names the order, its
product, its IPs and the amount due (and what the wallet already paid); a top-up says top-up."""

from __future__ import annotations

import re

import httpx
import pytest

from proxyplane.operations import REGISTRY
from proxyplane.platform import Platform
from tests.adapters.rest.test_order import ORDER, body
from tests.domains.stock.support import fresh_stock
from tests.support import Account, bearer

pytestmark = pytest.mark.anyio


def _text(page: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page))


def _dollars(cents: int) -> str:
    return f"${cents // 100}.{cents % 100:02d}"


async def test_order_remainder_page_names_the_order(
    client: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    await fresh_stock(platform, "proxy_datacenter", "IS", 40)
    key = await account.key()
    await account.credit(100)
    out = (await client.post(ORDER, json=body(count=30), headers=bearer(key))).json()
    unpaid = (await client.get("/api/v1/customer/orders/unpaid", headers=bearer(key))).json()["items"]
    number, due = unpaid[0]["service_number"], out["amount_due_cents"]
    page = await client.get(out["checkout_url"])
    assert page.status_code == 200
    text = _text(page.text)
    assert "top-up" not in text.lower()
    assert f"Order #{number} (Datacenter proxies, 30 IPs): {_dollars(due)} due" in text, text
    assert f"$1.00 of its {_dollars(due + 100)} already paid from your wallet" in text, text

    token = out["checkout_url"].split("token=", 1)[1]
    done = await client.post(
        f"/checkout/test/{out['deposit_id']}/decide", data={"token": token, "decision": "paid"}
    )
    done_text = _text(done.text)
    assert "Payment paid" in done_text and f"Order #{number}" in done_text, done_text
    assert f'href="/services/{out["service"]["service_id"]}"' in done.text
    after = _text((await client.get(out["checkout_url"])).text)
    assert "Payment paid" in after and f"Order #{number}" in after


async def test_top_up_page_says_top_up(client: httpx.AsyncClient, account: Account) -> None:
    key = await account.key()
    dep = (
        await client.post(
            "/api/v1/customer/wallet/deposit/init",
            json={"amount_cents": 2500, "payment_method": "card", "idempotency_key": "top-1"},
            headers=bearer(key),
        )
    ).json()
    text = _text((await client.get(dep["checkout_url"])).text)
    assert "Wallet top-up of $25.00" in text and "Order #" not in text, text
    page = (await client.get(dep["checkout_url"])).text
    assert f'action="/checkout/test/{dep["deposit_id"]}/decide"' in page

    # the page's read is the registered `checkout_view`, on the checkout door only: the page token is its
    # authority (a wrong one, or another deposit's, finds nothing) and the customer API does not serve it
    wrong = await client.get(f"/checkout/test/{dep['deposit_id']}?token=not-the-token")
    malformed = await client.get("/checkout/test/not-a-uuid?token=x")
    assert wrong.status_code == malformed.status_code == 404 and "Checkout not found" in wrong.text
    api = await client.get(f"/api/v1/checkout/test/{dep['deposit_id']}", headers=bearer(key))
    assert api.status_code == 404
    assert {name for name, op in REGISTRY.items() if op.serves("checkout")} == {"checkout_view"}
