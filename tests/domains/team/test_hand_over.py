"""Issue 34.5: the holder hands the account over to a member, through the real app. The member becomes
the holder (an owner nobody can remove, demote, or who can leave); the account's own sign-in is closed on
every door (dashboard password, legacy Basic, a reset link is no longer sent), its API keys keep working
(not asked to revoke them); the account's notifications go to the new holder, not the closed address."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from sqlalchemy import select

from proxyplane.jobs.mail_pass import notify_pass
from proxyplane.platform import Platform
from proxyplane.storage.models.mail import EmailMessage
from tests.adapters.legacy.support import auth
from tests.adapters.web.helpers import follow, login, post_form
from tests.domains.team.test_team_flow import join, members
from tests.jobs.mail_support import mailing
from tests.support import Account, bearer

API = "/api/v1"
pytestmark = pytest.mark.anyio


@pytest.fixture
async def second(client: httpx.AsyncClient) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(transport=client._transport, base_url="http://testserver") as c:
        yield c


async def mails(platform: Platform, to: str, kind: str) -> list[str]:
    async with platform.db.unit_of_work(write=False) as uow:
        rows = await uow.session.execute(
            select(EmailMessage.subject).where(EmailMessage.to_address == to, EmailMessage.kind == kind)
        )
        return [str(s) for s in rows.scalars()]


async def test_hand_over_to_a_member_closes_the_own_sign_in(
    platform: Platform, client: httpx.AsyncClient, second: httpx.AsyncClient, account: Account
) -> None:
    owner_key = await account.key()
    heir = await join(platform, second, owner_key, "developer")
    assert (await login(client, account.email, account.password)).status_code == 303
    listed = await members(client, owner_key)
    assert listed["you_hold"] is True
    items = listed["items"]
    assert isinstance(items, list)
    heir_id = next(m["member_id"] for m in items if m["email"] == heir)
    page = await client.get("/team")
    assert f"/team/members/{heir_id}/hand-over" in page.text
    done = await post_form(client, "/team", f"/team/members/{heir_id}/hand-over", {})
    assert done.status_code == 303 and done.headers["location"] == "/login", done.text
    assert (await client.get("/overview")).headers["location"].startswith("/login")  # this browser: out

    # the account's own sign-in is closed on every door; its API key still works
    assert (await login(client, account.email, account.password)).status_code != 303
    assert (await client.get("/api/services", headers=auth(account))).status_code in (401, 403)
    before = await mails(platform, account.email, "reset_password")
    asked = await post_form(client, "/forgot-password", "/forgot-password", {"email": account.email})
    assert asked.status_code in (200, 303), asked.text  # the same answer as for any address
    listed = await members(client, owner_key)
    items = listed["items"]
    assert isinstance(items, list) and items[0]["email"] == heir and items[0]["holder"] is True
    assert items[0]["role"] == "owner" and account.email not in [m["email"] for m in items]
    assert listed["you_hold"] is False  # the account's own key is not the holder now

    # nobody removes, demotes the holder; the holder cannot leave
    r = await client.delete(f"{API}/customer/me/members/{heir_id}", headers=bearer(owner_key))
    assert r.status_code == 403 and "holder" in r.text
    r = await client.patch(
        f"{API}/customer/me/members/{heir_id}", json={"role": "viewer"}, headers=bearer(owner_key)
    )
    assert r.status_code == 403
    team = await second.get("/team")
    assert '<strong id="your-role">owner</strong>' in team.text
    left = await follow(second, await post_form(second, "/team", "/team/leave", {}))
    assert "holder cannot leave" in left.text

    # the new holder was told; the account's notifications now reach them, not the closed address
    assert any(
        s.startswith("You now hold the ProxyPlane account")
        for s in await mails(platform, heir, "team_change")
    )
    await account.key(name="after hand-over")  # api_key.created
    await notify_pass(mailing(platform, "smtp://127.0.0.1:9"))
    assert "API key “after hand-over” created" in await mails(platform, heir, "api_key_created")
    assert "API key “after hand-over” created" not in await mails(platform, account.email, "api_key_created")
    assert await mails(platform, account.email, "reset_password") == before
    log = (await client.get(f"{API}/customer/me/activity", headers=bearer(owner_key))).json()
    assert ("member.handed_over", heir) in [(e["action"], e["detail"]) for e in log["items"]]
