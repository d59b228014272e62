"""A reseller in the console through the real app (issue 33.4): its home is its wallet page; it creates a
customer (bound to it), finds only its own customers, credits one from its wallet (once per form, 402
when its wallet cannot pay), and another's customer, service or ticket page is a 404 page; staff see the
resellers list and sell one credit."""

from __future__ import annotations

import re
import uuid

import httpx
import pytest

from proxyplane.platform import Platform
from tests.adapters.admin.test_console import TOKEN, csrf, sign_in
from tests.domains.operators.helpers import run
from tests.domains.operators.test_ticket_desk import open_ticket
from tests.support import Account, unique_email

pytestmark = pytest.mark.anyio


async def test_a_resellers_console(client: httpx.AsyncClient, platform: Platform, account: Account) -> None:
    email, _ = await sign_in(client, platform, "reseller")
    await run(platform, "operator_reseller_set_discount", operator_email=email, discount_percent=40)
    home = await client.get("/admin")
    assert home.status_code == 303 and home.headers["location"] == "/admin/reseller"
    wallet = await client.get("/admin/reseller")
    assert wallet.status_code == 200 and 'id="reseller-balance">$0.00<' in wallet.text
    nav = re.findall(r'<nav class="mainnav adminnav">(.*?)</nav>', wallet.text, re.S)[0]
    assert {"Customers", "Orders", "Tickets", "Wallet", "Sessions"} == set(
        re.findall(r">([A-Z]\w+)</a>", nav)
    )
    # a new customer: bound to it, found by it, nobody else's
    page = await client.get("/admin/customers")
    assert account.email not in page.text
    new = {"csrf": csrf(page.text), "form_token": TOKEN.search(page.text).group(1)}  # type: ignore[union-attr]
    mine = unique_email()
    made = await client.post(
        "/admin/customers/new", data={**new, "email": mine, "name": "Shop", "password": "first-pass-123"}
    )
    assert made.status_code == 303
    customer_id = int(made.headers["location"].split("/")[-1].split("?")[0])
    listed = await client.get("/admin/customers")
    assert mine in listed.text and account.email not in listed.text
    searched = await client.get("/admin/customers", params={"q": account.email})
    assert (
        "No customer matches." in searched.text
        and f"/admin/customers/{account.customer_id}" not in searched.text
    )
    # another's customer and ticket: the page of one that does not exist
    for path in (
        f"/admin/customers/{account.customer_id}",
        f"/admin/tickets/{(await open_ticket(client, account))[0]}",
    ):
        other = await client.get(path)
        assert other.status_code == 404 and account.email not in other.text, path
    # a credit from its wallet: 402 while empty, then paid at 60% once
    page = await client.get(f"/admin/customers/{customer_id}")
    assert 'id="reseller-price"' in page.text and "refund" not in page.text.lower()
    form = {"csrf": csrf(page.text), "form_token": TOKEN.search(page.text).group(1)}  # type: ignore[union-attr]
    form |= {"direction": "credit", "amount": "10.00", "reason": "cash"}
    broke = await client.post(f"/admin/customers/{customer_id}/wallet", data=form)
    assert broke.status_code == 402 and "insufficient reseller balance" in broke.text
    await run(platform, "operator_reseller_credit", operator_email=email, cents=1_000, reason="sold")
    paid = await client.post(f"/admin/customers/{customer_id}/wallet", data=form)
    assert paid.status_code == 303
    again = await client.post(f"/admin/customers/{customer_id}/wallet", data=form)
    assert again.status_code == 409
    shown = await client.get("/admin/reseller")
    assert 'id="reseller-balance">$4.00<' in shown.text and "customer_credit" in shown.text
    assert (await run(platform, "operator_show_customer", email=mine))["balance_cents"] == 1_000
    assert (await client.get("/admin/audit")).status_code == 403


async def test_staff_list_resellers_and_sell_one_credit(
    client: httpx.AsyncClient, platform: Platform
) -> None:
    reseller = f"r-{uuid.uuid4().hex[:10]}@example.com"
    await run(platform, "operator_reseller_create", operator_email=reseller, discount_percent=15)
    await sign_in(client, platform, "admin")
    page = await client.get("/admin/resellers")
    assert page.status_code == 200 and reseller in page.text
    form = {"csrf": csrf(page.text), "form_token": TOKEN.search(page.text).group(1)}  # type: ignore[union-attr]
    sold = await client.post(
        "/admin/resellers/credit",
        data={**form, "operator_email": reseller, "amount": "25.50", "reason": "inv 9"},
    )
    assert sold.status_code == 303
    assert (
        await client.post("/admin/resellers/credit", data={**form, "operator_email": reseller})
    ).status_code in (409, 422)
    wallet = await client.get("/admin/reseller", params={"email": reseller})
    assert 'id="reseller-balance">$25.50<' in wallet.text
    assert (await run(platform, "operator_reseller_wallet", operator_email=reseller))[
        "balance_cents"
    ] == 2_550
