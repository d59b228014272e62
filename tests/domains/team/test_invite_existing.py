"""Issue 34.5, "an invitation to an address that already has an account asks it to accept", and what
happens then, through the real app: the email and the page ask the person to sign in (their own two-factor
included) and come back to the invitation, accepting makes them a member acting on the account with the
role, and their own account stays theirs, untouched. And a member who leaves: every browser of theirs
acting on the account goes back to their own account, their keys on it stop working."""

from __future__ import annotations

import re
import time
from collections.abc import AsyncIterator
from urllib.parse import unquote

import httpx
import pyotp
import pytest
from sqlalchemy import select

from proxyplane.domains.accounts import two_factor
from proxyplane.ops import Caller, invoke
from proxyplane.platform import Platform
from proxyplane.storage.models.mail import EmailMessage
from tests.adapters.web.helpers import PASSWORD, csrf_of, follow, login, post_form
from tests.domains.team.test_team_flow import invitation_link, invite, join, members
from tests.support import Account, bearer, make_account

API = "/api/v1"
pytestmark = pytest.mark.anyio


@pytest.fixture
async def browsers(client: httpx.AsyncClient) -> AsyncIterator[tuple[httpx.AsyncClient, httpx.AsyncClient]]:
    """Two more browsers on the same app (their own cookies)."""
    async with (
        httpx.AsyncClient(transport=client._transport, base_url="http://testserver") as one,
        httpx.AsyncClient(transport=client._transport, base_url="http://testserver") as two,
    ):
        yield one, two


async def two_factor_on(platform: Platform, person: Account) -> pyotp.TOTP:
    me = Caller(customer_id=person.customer_id, client_ip="127.0.0.61", channel="web")
    setup = await invoke(platform, two_factor.SETUP, me, two_factor.Empty())
    otp = pyotp.TOTP(setup.secret)
    await invoke(platform, two_factor.ENABLE, me, two_factor.Code(code=otp.now()))
    return otp


async def test_an_existing_account_signs_in_from_the_invitation_and_accepts(
    platform: Platform,
    client: httpx.AsyncClient,
    browsers: tuple[httpx.AsyncClient, httpx.AsyncClient],
    account: Account,
) -> None:
    browser, _ = browsers
    owner_key = await account.key()
    person = await make_account(platform, PASSWORD)
    await person.credit(1234)  # their own account's wallet
    own_key = await person.key()
    otp = await two_factor_on(platform, person)
    sent = await invite(client, owner_key, person.email, "billing")
    assert sent["has_sign_in"] is True
    async with platform.db.unit_of_work(write=False) as uow:
        text = (
            await uow.session.execute(
                select(EmailMessage.text_body).where(
                    EmailMessage.to_address == person.email, EmailMessage.kind == "team_invitation"
                )
            )
        ).scalar_one()
    assert "already have a ProxyPlane sign-in with this address: sign in and accept" in text
    link = await invitation_link(platform, person.email)

    page = await browser.get(link)
    assert "Sign in to accept" in page.text and "Create a sign-in" not in page.text
    sign_in = re.search(r'href="(/login\?next=[^"]+)">Sign in to accept', page.text)
    assert sign_in is not None and unquote(sign_in.group(1).split("=", 1)[1]) == link
    form = await browser.get(sign_in.group(1))
    assert f'name="next" value="{link}"' in form.text
    step = await browser.post(
        "/login",
        data={"csrf": csrf_of(form), "email": person.email, "password": PASSWORD, "next": link},
    )
    assert step.status_code == 200 and "Enter your code" in step.text  # their own second factor
    pending = re.search(r'name="pending" value="([^"]+)"', step.text)
    assert pending is not None
    code = {
        "csrf": csrf_of(form),
        "pending": pending.group(1),
        "code": otp.at(time.time() + 30),
        "next": link,
    }
    signed = await browser.post("/login/code", data=code)
    assert signed.status_code == 303 and signed.headers["location"] == link  # back to the invitation
    page = await browser.get(link)
    assert "Accept the invitation" in page.text and "as <strong>billing</strong>" in page.text
    accepted = await follow(browser, await browser.post(link, data={"csrf": csrf_of(page)}))
    assert f"on {account.email}" in accepted.text and "as billing" in accepted.text

    listed = {m["email"]: m["role"] for m in (await members(client, owner_key))["items"]}  # type: ignore[attr-defined]
    assert listed[person.email] == "billing"
    team = await browser.get("/team")
    assert "Your own account" in team.text and account.email in team.text  # both, one switch away
    again = await browser.get(link)
    assert again.status_code == 410 and "already used" in again.text
    # their own account is untouched: its wallet, its key, its sign-in
    wallet = await client.get(f"{API}/customer/wallet/balance", headers=bearer(own_key))
    assert wallet.status_code == 200 and wallet.json()["balance_cents"] == 1234
    mine = await client.get(f"{API}/customer/me/members", headers=bearer(own_key))
    assert mine.json()["your_role"] == "owner"
    assert [(m["email"], m["holder"]) for m in mine.json()["items"]] == [(person.email, True)]  # alone
    log = (await client.get(f"{API}/customer/me/activity", headers=bearer(owner_key))).json()
    assert (person.email, "member.joined") in [(e["actor"], e["action"]) for e in log["items"]]


async def test_leaving_takes_every_browser_of_the_member_off_the_account(
    platform: Platform,
    client: httpx.AsyncClient,
    browsers: tuple[httpx.AsyncClient, httpx.AsyncClient],
    account: Account,
) -> None:
    first, other = browsers
    owner_key = await account.key()
    email = await join(platform, first, owner_key, "developer")
    made = await post_form(first, "/keys", "/keys", {"name": "dev", "scopes": ["services:read"]})
    secret = re.search(r'id="secret">(ppk_[^<]+)<', (await first.get(made.headers["location"])).text)
    assert secret
    assert (await login(other, email)).status_code == 303  # a second browser of the member's
    member_id = next(
        m["member_id"]
        for m in (await members(client, owner_key))["items"]  # type: ignore[attr-defined]
        if m["email"] == email
    )
    switched = await post_form(other, "/team", "/team/switch", {"member_id": str(member_id)})
    assert f"on {account.email}" in (await follow(other, switched)).text
    team = await first.get("/team")
    gone = await follow(first, await first.post("/team/leave", data={"csrf": csrf_of(team)}))
    assert f"You left {account.email}" in gone.text
    for browser in (first, other):
        page = await browser.get("/overview")
        assert page.status_code == 200 and f"on {account.email}" not in page.text  # own account, signed in
        assert (await browser.get("/keys")).status_code == 200
    assert (await client.get(f"{API}/customer/services", headers=bearer(secret.group(1)))).status_code == 401
    back = await post_form(other, "/team", "/team/switch", {"member_id": str(member_id)})
    assert back.headers["location"].startswith("/team")  # no way back without a new invitation
    refused = await other.get(back.headers["location"])
    assert "not a member of that account" in refused.text and f"on {account.email}" not in refused.text
