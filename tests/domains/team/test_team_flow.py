"""Issue 34.5, team accounts, through the real app: an owner invites by email (the outbox), the invited
person makes their own sign-in and accepts in the dashboard, acts on the account with the role's scopes;
keys never exceed the role; spending needs a spending role; removing a member ends their sessions and
their keys; the activity log names who did what; links are single-use."""

from __future__ import annotations

import re
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta

import httpx
import pytest
from sqlalchemy import select, update

from proxyplane.core.clock import utcnow
from proxyplane.platform import Platform
from proxyplane.storage.models import ApiKey
from proxyplane.storage.models.mail import EmailMessage
from proxyplane.storage.models.team import TeamInvitation
from tests.adapters.web.helpers import PASSWORD, csrf_of, follow, post_form, signup
from tests.support import Account, bearer, make_account, unique_email

API = "/api/v1"
pytestmark = pytest.mark.anyio


@pytest.fixture
async def second(client: httpx.AsyncClient) -> AsyncIterator[httpx.AsyncClient]:
    """Another browser on the same app (its own cookies)."""
    async with httpx.AsyncClient(transport=client._transport, base_url="http://testserver") as c:
        yield c


async def invitation_link(platform: Platform, email: str) -> str:
    async with platform.db.unit_of_work(write=False) as uow:
        text = (
            await uow.session.execute(
                select(EmailMessage.text_body)
                .where(EmailMessage.to_address == email, EmailMessage.kind == "team_invitation")
                .order_by(EmailMessage.id.desc())
                .limit(1)
            )
        ).scalar_one()
    found = re.search(r"https?://[^/\s]+(/team/accept/\S+)", text)
    assert found, text
    return found.group(1)


async def invite(client: httpx.AsyncClient, key: str, email: str, role: str) -> dict[str, object]:
    r = await client.post(
        f"{API}/customer/me/invitations", json={"email": email, "role": role}, headers=bearer(key)
    )
    assert r.status_code == 201, r.text
    return dict(r.json())


async def join(platform: Platform, browser: httpx.AsyncClient, owner_key: str, role: str) -> str:
    """Invite a new address, sign it up from the invitation's link and accept; returns the address."""
    email = unique_email()
    sent = await invite(browser, owner_key, email, role)
    assert sent["has_sign_in"] is False and sent["role"] == role
    link = await invitation_link(platform, email)
    page = await browser.get(link)
    assert page.status_code == 200 and "Create a sign-in" in page.text
    await signup(browser, email)  # the person's own sign-in (own password), address confirmed
    page = await browser.get(link)
    assert "Accept the invitation" in page.text
    accepted = await browser.post(link, data={"csrf": csrf_of(page)})
    assert accepted.status_code == 303, accepted.text
    overview = await follow(browser, accepted)
    assert f"as {role}" in overview.text
    return email


async def members(client: httpx.AsyncClient, key: str) -> dict[str, object]:
    r = await client.get(f"{API}/customer/me/members", headers=bearer(key))
    assert r.status_code == 200, r.text
    return dict(r.json())


async def test_billing_member_tops_up_but_cannot_create_keys(
    platform: Platform, client: httpx.AsyncClient, second: httpx.AsyncClient, account: Account
) -> None:
    owner_key = await account.key()
    email = await join(platform, second, owner_key, "billing")
    team = await second.get("/team")
    assert team.status_code == 200 and '<strong id="your-role">billing</strong>' in team.text
    assert f"on {account.email}" in team.text  # the top bar says which account the browser acts on

    topped = await post_form(second, "/wallet", "/wallet/topup", {"amount": "12", "payment_method": "card"})
    assert topped.status_code == 303, topped.text  # to the checkout: the account's deposit
    created = await post_form(second, "/keys", "/keys", {"name": "mine", "scopes": ["services:read"]})
    assert created.status_code == 403 and "customer:write" in created.text

    listed = await members(client, owner_key)
    items = listed["items"]
    assert isinstance(items, list) and [m["role"] for m in items] == ["owner", "billing"]
    assert items[0]["holder"] is True and items[1]["email"] == email
    activity = (await client.get(f"{API}/customer/me/activity", headers=bearer(owner_key))).json()
    done = [(e["actor"], e["action"]) for e in activity["items"]]
    assert (email, "init_deposit") in done and (email, "member.joined") in done
    assert (account.email, "member.invited") in done


async def test_developer_keys_stay_within_the_role_and_die_with_the_member(
    platform: Platform, client: httpx.AsyncClient, second: httpx.AsyncClient, account: Account
) -> None:
    owner_key = await account.key()
    email = await join(platform, second, owner_key, "developer")
    too_wide = await post_form(second, "/keys", "/keys", {"name": "wide", "scopes": ["wallet:spend"]})
    assert too_wide.status_code == 403 and "wallet:spend" in too_wide.text
    made = await post_form(
        second, "/keys", "/keys", {"name": "dev", "scopes": ["services:read", "services:write"]}
    )
    assert made.status_code == 303, made.text
    page = await second.get(made.headers["location"])
    secret = re.search(r'id="secret">(ppk_[^<]+)<', page.text)
    assert secret, page.text
    dev_key = secret.group(1)
    r = await client.get(f"{API}/customer/me/members", headers=bearer(dev_key))
    assert r.status_code == 403  # the key holds services:* only
    # a spending operation asks for a spending role even where its own scopes are held
    refresh = await client.post(
        f"{API}/customer/services/{uuid.uuid4()}/proxy/refresh",
        json={"idempotency_key": "x"},
        headers=bearer(dev_key),
    )
    assert refresh.status_code == 403 and "wallet:spend" in refresh.text, refresh.text
    # the owner narrows the role: the key loses services:write; then removes the member
    listed = await members(client, owner_key)
    member_id = [m for m in listed["items"] if m["email"] == email][0]["member_id"]  # type: ignore[index, union-attr]
    r = await client.patch(
        f"{API}/customer/me/members/{member_id}", json={"role": "viewer"}, headers=bearer(owner_key)
    )
    assert r.status_code == 200, r.text
    async with platform.db.unit_of_work(write=False) as uow:
        scopes = (
            await uow.session.execute(select(ApiKey.scopes).where(ApiKey.member_id == member_id))
        ).scalar_one()
    assert scopes == ["services:read"]
    gone = await client.delete(f"{API}/customer/me/members/{member_id}", headers=bearer(owner_key))
    assert gone.status_code == 200 and gone.json()["keys_revoked"] == 1
    assert (await client.get(f"{API}/customer/services", headers=bearer(dev_key))).status_code == 401
    after = await second.get("/overview")
    assert after.status_code == 303 and after.headers["location"].startswith("/login")  # signed out
    assert email not in str((await members(client, owner_key))["items"])


async def test_roles_that_manage_and_the_holder(
    platform: Platform, client: httpx.AsyncClient, second: httpx.AsyncClient, account: Account
) -> None:
    owner_key = await account.key()
    await join(platform, second, owner_key, "admin")
    # an admin invites, but not an owner, and cannot touch an owner
    r = await post_form(second, "/team", "/team/invite", {"email": unique_email(), "role": "owner"})
    assert "only an owner can invite an owner" in (await follow(second, r)).text
    r = await post_form(second, "/team", "/team/invite", {"email": unique_email(), "role": "viewer"})
    assert "Invitation sent" in (await follow(second, r)).text
    co_owner = unique_email()
    await invite(client, owner_key, co_owner, "owner")
    async with httpx.AsyncClient(transport=client._transport, base_url="http://testserver") as third:
        link = await invitation_link(platform, co_owner)
        await signup(third, co_owner)
        page = await third.get(link)
        assert (await third.post(link, data={"csrf": csrf_of(page)})).status_code == 303
        again = await third.get(link)  # the link works once
        assert again.status_code == 410 and "already used" in again.text
    listed = await members(client, owner_key)
    owner_row = [m for m in listed["items"] if m["email"] == co_owner][0]  # type: ignore[index, union-attr]
    r = await post_form(second, "/team", f"/team/members/{owner_row['member_id']}/remove", {})
    assert "only an owner can remove an owner" in (await follow(second, r)).text
    # the holder has no member id: nothing can remove or demote it; inviting its address is refused
    r = await client.post(
        f"{API}/customer/me/invitations",
        json={"email": account.email, "role": "viewer"},
        headers=bearer(owner_key),
    )
    assert r.status_code == 409
    assert (await client.delete(f"{API}/customer/me/members/0", headers=bearer(owner_key))).status_code == 422
    viewer_key = await account.key({"customer:read"})
    r = await client.get(f"{API}/customer/me/members", headers=bearer(viewer_key))
    assert r.status_code == 200 and r.json()["your_role"] == "owner"  # the account's own key: the holder


async def test_invitation_links_expired_other_address_existing_account(
    platform: Platform, client: httpx.AsyncClient, second: httpx.AsyncClient, account: Account
) -> None:
    owner_key = await account.key()
    existing = await make_account(platform, PASSWORD)
    sent = await invite(client, owner_key, existing.email, "viewer")
    assert sent["has_sign_in"] is True  # the email asks it to sign in and accept
    link = await invitation_link(platform, existing.email)
    page = await second.get(link)
    assert "Sign in to accept" in page.text
    someone = await signup(second)  # signed in as another address
    page = await second.get(link)
    assert "this invitation is for" in page.text and someone in page.text
    async with platform.db.unit_of_work() as uow:
        await uow.session.execute(
            update(TeamInvitation)
            .where(TeamInvitation.email == existing.email.lower())
            .values(expires_at=utcnow() - timedelta(minutes=1))
        )
        await uow.commit()
    expired = await second.get(link)
    assert expired.status_code == 410 and "expired" in expired.text
    assert (await second.get("/team/accept/not-a-token")).status_code == 404


async def test_a_member_leaves_and_the_holder_cannot(
    platform: Platform, client: httpx.AsyncClient, second: httpx.AsyncClient, account: Account
) -> None:
    owner_key = await account.key()
    email = await join(platform, second, owner_key, "developer")
    made = await post_form(second, "/keys", "/keys", {"name": "dev", "scopes": ["services:read"]})
    page = await second.get(made.headers["location"])
    secret = re.search(r'id="secret">(ppk_[^<]+)<', page.text)
    assert secret, page.text
    team = await second.get("/team")
    assert 'id="leave"' in team.text
    left = await client.post(f"{API}/customer/me/membership/leave", headers=bearer(owner_key))
    assert left.status_code == 409 and "holder cannot leave" in left.text  # the account's own key
    gone = await follow(second, await second.post("/team/leave", data={"csrf": csrf_of(team)}))
    assert f"You left {account.email}" in gone.text and "1 of your API keys" in gone.text
    assert f"on {account.email}" not in gone.text  # still signed in, on the person's own account
    assert (await client.get(f"{API}/customer/services", headers=bearer(secret.group(1)))).status_code == 401
    assert email not in str((await members(client, owner_key))["items"])
    log = (await client.get(f"{API}/customer/me/activity", headers=bearer(owner_key))).json()
    assert (email, "member.left") in [(e["actor"], e["action"]) for e in log["items"]]
    again = await second.get("/team")
    assert again.status_code == 200 and 'id="leave"' not in again.text
