"""Team accounts as an attacker would try them (h3's review): a removed or demoted admin's open invitations
die with their right to invite (an accomplice invited just before the removal cannot join afterwards),
and a member who does not manage the team revokes only the API keys they made themselves, never the
holder's or another member's."""

from __future__ import annotations

import re

import httpx
import pytest
from sqlalchemy import select

from proxyplane.platform import Platform
from proxyplane.storage.models.team import TeamInvitation
from tests.adapters.web.helpers import post_form
from tests.domains.team.test_team_flow import API, join, members, second  # noqa: F401 - the fixture
from tests.support import Account, bearer, unique_email

pytestmark = pytest.mark.anyio


async def _member_id(client: httpx.AsyncClient, owner_key: str, email: str) -> int:
    listed = await members(client, owner_key)
    items = listed["items"]
    assert isinstance(items, list)
    return int([m for m in items if m["email"] == email][0]["member_id"])


async def _open(platform: Platform, to: str) -> bool:
    async with platform.db.unit_of_work(write=False) as uow:
        row = (
            await uow.session.execute(select(TeamInvitation).where(TeamInvitation.email == to))
        ).scalar_one()
    return row.revoked_at is None and row.accepted_at is None


@pytest.mark.parametrize("how", ["removed", "demoted"])
async def test_an_admins_open_invitations_end_with_the_right_to_invite(
    platform: Platform,
    client: httpx.AsyncClient,
    second: httpx.AsyncClient,  # noqa: F811 - the fixture
    account: Account,
    how: str,
) -> None:
    owner_key = await account.key()
    admin = await join(platform, second, owner_key, "admin")
    accomplice, other = unique_email(), unique_email()
    r = await post_form(second, "/team", "/team/invite", {"email": accomplice, "role": "admin"})
    assert r.status_code == 303, r.text
    sent = await client.post(
        f"{API}/customer/me/invitations", json={"email": other, "role": "viewer"}, headers=bearer(owner_key)
    )
    assert sent.status_code == 201, sent.text  # the holder's own invitation
    assert await _open(platform, accomplice) and await _open(platform, other)
    member_id = await _member_id(client, owner_key, admin)
    if how == "removed":
        r = await client.delete(f"{API}/customer/me/members/{member_id}", headers=bearer(owner_key))
    else:
        r = await client.patch(
            f"{API}/customer/me/members/{member_id}", json={"role": "viewer"}, headers=bearer(owner_key)
        )
    assert r.status_code == 200, r.text
    assert not await _open(platform, accomplice)  # withdrawn: its link says so
    assert await _open(platform, other)  # the holder's invitation stands


async def test_an_admins_key_invitation_names_the_admin_and_ends_with_them(
    platform: Platform,
    client: httpx.AsyncClient,
    second: httpx.AsyncClient,  # noqa: F811 - the fixture
    account: Account,
) -> None:
    owner_key = await account.key()
    admin = await join(platform, second, owner_key, "admin")
    made = await post_form(second, "/keys", "/keys", {"name": "ops", "scopes": ["customer:write"]})
    page = await second.get(made.headers["location"])
    secret = re.search(r'id="secret">(ppk_[^<]+)<', page.text)
    assert secret, page.text
    accomplice = unique_email()
    r = await client.post(
        f"{API}/customer/me/invitations",
        json={"email": accomplice, "role": "admin"},
        headers=bearer(secret.group(1)),
    )
    assert r.status_code == 201, r.text
    async with platform.db.unit_of_work(write=False) as uow:
        by = (
            await uow.session.execute(
                select(TeamInvitation.invited_by).where(TeamInvitation.email == accomplice)
            )
        ).scalar_one()
    assert by == admin  # the admin, not the holder, invited (the email and the list say so)
    member_id = await _member_id(client, owner_key, admin)
    r = await client.delete(f"{API}/customer/me/members/{member_id}", headers=bearer(owner_key))
    assert r.status_code == 200, r.text
    assert not await _open(platform, accomplice)


async def test_a_developer_revokes_only_their_own_keys(
    platform: Platform,
    client: httpx.AsyncClient,
    second: httpx.AsyncClient,  # noqa: F811 - the fixture
    account: Account,
) -> None:
    owner_key = await account.key()
    listed = await client.get(f"{API}/customers/me/api-keys", headers=bearer(owner_key))
    holder_key_id = listed.json()[0]["key_id"]
    await join(platform, second, owner_key, "developer")
    made = await post_form(
        second, "/keys", "/keys", {"name": "dev", "scopes": ["customer:read", "customer:write"]}
    )
    page = await second.get(made.headers["location"])
    secret = re.search(r'id="secret">(ppk_[^<]+)<', page.text)
    assert secret, page.text
    dev_key = secret.group(1)
    r = await client.delete(f"{API}/customers/me/api-keys/{holder_key_id}", headers=bearer(dev_key))
    assert r.status_code == 403, r.text
    assert (await client.get(f"{API}/customers/me/api-keys", headers=bearer(owner_key))).status_code == 200
    r = await post_form(second, "/keys", f"/keys/{holder_key_id}/revoke", {})
    assert r.status_code == 403, r.text  # the dashboard door too
    mine = (await client.get(f"{API}/customers/me/api-keys", headers=bearer(dev_key))).json()
    mine_id = [k for k in mine if k["name"] == "dev"][0]["key_id"]
    r = await client.delete(f"{API}/customers/me/api-keys/{mine_id}", headers=bearer(dev_key))
    assert r.status_code == 200, r.text
