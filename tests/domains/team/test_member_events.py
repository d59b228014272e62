"""Issue 34.5: member changes are webhook events (member.joined, member.role_changed, member.removed;
member.left and account.handed_over likewise), delivered to the account's endpoints that subscribe."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from proxyplane.core.settings import Settings
from proxyplane.platform import Platform
from tests.domains.team.test_team_flow import join, members
from tests.support import Account, bearer

API = "/api/v1"
pytestmark = pytest.mark.anyio


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.model_copy(update={"webhooks_allow_http_loopback": True})


@pytest.fixture
async def second(client: httpx.AsyncClient) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(transport=client._transport, base_url="http://testserver") as c:
        yield c


async def test_member_changes_are_webhook_events(
    platform: Platform, client: httpx.AsyncClient, second: httpx.AsyncClient, account: Account
) -> None:
    owner_key = await account.key()
    types = ["member.joined", "member.role_changed", "member.removed", "member.left", "account.handed_over"]
    body = {"url": "http://127.0.0.1:9/hook", "event_types": types}
    made = await client.post(f"{API}/customer/webhooks", json=body, headers=bearer(owner_key))
    assert made.status_code == 201, made.text
    email = await join(platform, second, owner_key, "developer")
    listed = await members(client, owner_key)
    member_id = [m for m in listed["items"] if m["email"] == email][0]["member_id"]  # type: ignore[index, union-attr]
    r = await client.patch(
        f"{API}/customer/me/members/{member_id}", json={"role": "viewer"}, headers=bearer(owner_key)
    )
    assert r.status_code == 200, r.text
    assert (
        await client.delete(f"{API}/customer/me/members/{member_id}", headers=bearer(owner_key))
    ).status_code == 200
    page = await client.get(
        f"{API}/customer/webhooks/{made.json()['endpoint_id']}/deliveries", headers=bearer(owner_key)
    )
    got = {d["event_type"]: d["payload"]["data"] for d in page.json()["items"]}
    assert set(got) == {"member.joined", "member.role_changed", "member.removed"}, got
    assert got["member.joined"] == {"member_id": member_id, "email": email, "role": "developer"}
    assert (
        got["member.role_changed"]["before"] == "developer" and got["member.role_changed"]["role"] == "viewer"
    )
    assert got["member.removed"]["keys_revoked"] == 0
