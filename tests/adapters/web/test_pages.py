"""Dashboard pages: each renders for a signed-in customer, and each action changes what the REST API shows."""

from __future__ import annotations

import re

import httpx
import pytest

from proxyplane.platform import Platform
from proxyplane.storage.models import Customer
from tests.adapters.web.helpers import csrf_of, follow, post_form, signup
from tests.support import bearer

pytestmark = pytest.mark.anyio
PAGES = [
    "/overview",
    "/wallet",
    "/keys",
    "/profile",
    "/security",
    "/buy",
    "/services",
    "/tickets",
    "/invoices",
    "/catalog",
]


async def customer_id(platform: Platform, email: str) -> int:
    from proxyplane.domains.accounts.service import require_by_email

    async with platform.db.unit_of_work(write=False) as uow:
        c: Customer = await require_by_email(uow.session, email)
        return c.id


async def api_key(client: httpx.AsyncClient, scopes: list[str]) -> str:
    r = await follow(
        client, await post_form(client, "/keys", "/keys", {"name": "from the page", "scopes": scopes})
    )
    match = re.search(r'id="secret">([^<]+)<', r.text)
    assert match
    return match.group(1)


async def test_every_page_renders_for_a_signed_in_customer(client: httpx.AsyncClient) -> None:
    await signup(client)
    for url in PAGES:
        page = await client.get(url)
        assert page.status_code == 200, url
        assert "<h1>" in page.text and 'name="csrf"' in page.text, url
        assert "Traceback" not in page.text


async def test_pages_redirect_to_sign_in_without_session(client: httpx.AsyncClient) -> None:
    for url in PAGES:
        r = await client.get(url)
        assert r.status_code == 303, url
        assert r.headers["location"] == f"/login?next={url}"
    assert (await client.get("/")).headers["location"] == "/login"


async def test_profile_form_changes_what_the_api_shows(client: httpx.AsyncClient) -> None:
    await signup(client)
    key = await api_key(client, ["customer:read"])
    r = await post_form(client, "/profile", "/profile", {"name": "Ada Lovelace", "phone": "+44 20 7946 0000"})
    assert r.status_code == 303
    me = (await client.get("/api/v1/customer/me", headers=bearer(key))).json()
    assert me["name"] == "Ada Lovelace" and me["phone"] == "+44 20 7946 0000"
    page = await client.get("/profile")
    assert "Profile saved." in page.text and "Ada Lovelace" in page.text


async def test_profile_domain_error_is_shown_on_the_form(client: httpx.AsyncClient) -> None:
    await signup(client)
    r = await post_form(client, "/profile", "/profile", {"name": "Ada", "phone": "call me maybe"})
    assert r.status_code == 422
    assert 'class="error"' in r.text and "phone" in r.text


async def test_api_key_created_and_revoked_in_the_page(client: httpx.AsyncClient) -> None:
    await signup(client)
    key = await api_key(client, ["customer:read", "wallet:read"])
    listed = (await client.get("/api/v1/customers/me/api-keys", headers=bearer(key))).json()
    assert [k["scopes"] for k in listed] == [["customer:read", "wallet:read"]]
    page = await client.get("/keys")
    assert key not in page.text  # the secret is shown once only
    assert listed[0]["prefix"] in page.text
    assert "127.0.0.9" in page.text  # last used IP of the API call above
    r = await client.post(f"/keys/{listed[0]['key_id']}/revoke", data={"csrf": csrf_of(page)})
    assert r.status_code == 303
    assert (await client.get("/api/v1/customer/me", headers=bearer(key))).status_code == 401


async def test_api_key_without_scopes_shows_the_operation_error(client: httpx.AsyncClient) -> None:
    await signup(client)
    r = await post_form(client, "/keys", "/keys", {"name": "nothing"})
    assert r.status_code == 422
    assert "scopes" in r.text


async def test_top_up_through_test_checkout(client: httpx.AsyncClient, platform: Platform) -> None:
    email = await signup(client)
    r = await post_form(client, "/wallet", "/wallet/topup", {"amount": "25.50", "payment_method": "card"})
    assert r.status_code == 303
    checkout = r.headers["location"]
    assert checkout.startswith("http://testserver/checkout/test/")
    page = await client.get(checkout)
    token = re.search(r'name="token" value="([^"]+)"', page.text)
    assert token
    path = re.search(r'action="([^"]+)"', page.text)
    assert path
    paid = await client.post(path.group(1), data={"token": token.group(1), "decision": "paid"})
    assert "Payment paid" in paid.text
    wallet = await client.get("/wallet")
    assert "$25.50" in wallet.text
    key = await api_key(client, ["wallet:read"])
    assert (await client.get("/api/v1/customer/wallet/balance", headers=bearer(key))).json()[
        "balance_cents"
    ] == 2550
    assert await customer_id(platform, email) > 0


async def test_top_up_errors_are_shown_on_the_form(client: httpx.AsyncClient) -> None:
    await signup(client)
    r = await post_form(client, "/wallet", "/wallet/topup", {"amount": "1", "payment_method": "card"})
    assert r.status_code == 422
    assert "amount_cents must be between" in r.text
    kyc = await post_form(
        client, "/wallet", "/wallet/topup", {"amount": "50", "payment_method": "bank_transfer"}
    )
    assert kyc.status_code == 403
    bad = await post_form(client, "/wallet", "/wallet/topup", {"amount": "ten", "payment_method": "card"})
    assert bad.status_code == 422 and "Enter an amount" in bad.text


async def test_ledger_paging(client: httpx.AsyncClient, platform: Platform) -> None:
    from tests.support import Account

    email = await signup(client)
    account = Account(platform, await customer_id(platform, email), email, "")
    for _ in range(30):
        await account.credit(100)
    first = await client.get("/wallet")
    assert "1–25 of 30" in first.text and "$30.00" in first.text
    second = await client.get("/wallet?offset=25")
    assert "26–30 of 30" in second.text
    assert second.text.count('<td class="num pos">') == 5


async def test_unknown_dashboard_error_never_shows_a_trace(client: httpx.AsyncClient) -> None:
    await signup(client)
    page = await client.get("/keys")
    r = await client.post("/keys/not-a-uuid/revoke", data={"csrf": csrf_of(page)})
    assert r.status_code == 422
    assert "Traceback" not in r.text and 'class="error"' in r.text


async def test_ticket_opened_replied_and_closed_in_pages(client: httpx.AsyncClient) -> None:
    await signup(client)
    key = await api_key(client, ["tickets:read"])
    r = await post_form(
        client, "/tickets", "/tickets", {"subject": "Slow proxy", "message": "Line one\nline two"}
    )
    assert r.status_code == 303
    url = r.headers["location"]
    tid = url.rsplit("/", 1)[1]
    page = await client.get(url)
    token = re.search(r'name="form_token" value="([^"]+)"', page.text)
    assert token
    reply = {"csrf": csrf_of(page), "form_token": token.group(1), "message": "More details"}
    assert (await client.post(f"{url}/reply", data=reply)).status_code == 303
    again = await client.post(f"{url}/reply", data=reply)  # the same reply form sent again
    assert "already sent" in (await follow(client, again)).text
    api = (await client.get(f"/api/v1/customer/tickets/{tid}", headers=bearer(key))).json()
    assert [m["body"] for m in api["messages"]] == ["Line one\nline two", "More details"]
    closed = await post_form(client, url, f"{url}/close", {})
    assert closed.status_code == 303
    assert (await client.get(f"/api/v1/customer/tickets/{tid}", headers=bearer(key))).json()[
        "status"
    ] == "closed"
    listing = await client.get("/tickets")
    assert "Slow proxy" in listing.text and "closed" in listing.text
    empty = await post_form(client, "/tickets", "/tickets", {"subject": "", "message": "x"})
    assert empty.status_code == 422 and 'class="error"' in empty.text
