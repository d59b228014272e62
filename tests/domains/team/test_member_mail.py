"""Issue 34.5 against a real SMTP server on loopback (aiosmtpd): team members get the account's
notifications their role concerns (billing: money; developer: keys, limits), each once however often the
job runs (expiry reminders too), with their own one-click unsubscribe; a member whose role changes or who
is removed is told, and the account's address is told who joined."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta

import httpx
import pytest

from proxyplane.domains.wallet import service as wallet
from proxyplane.jobs.renewals import run_once
from proxyplane.platform import Platform
from tests.adapters.rest.growth_support import buy, load
from tests.domains.team.test_team_flow import join, members
from tests.jobs.mail_support import deliver, mailing
from tests.jobs.smtp_sink import parts, smtp_sink
from tests.support import Account, bearer

API = "/api/v1"
pytestmark = pytest.mark.anyio


@pytest.fixture
async def browsers(client: httpx.AsyncClient) -> AsyncIterator[list[httpx.AsyncClient]]:
    async with (
        httpx.AsyncClient(transport=client._transport, base_url="http://testserver") as one,
        httpx.AsyncClient(transport=client._transport, base_url="http://testserver") as two,
    ):
        yield [one, two]


def subjects(sink: object, to: str) -> list[str]:
    return sorted(str(m["Subject"]).strip() for m in sink.to(to))  # type: ignore[attr-defined]


async def test_members_get_their_roles_notifications_once_and_hear_of_changes(
    platform: Platform, client: httpx.AsyncClient, browsers: list[httpx.AsyncClient], account: Account
) -> None:
    owner_key = await account.key()
    billing = await join(platform, browsers[0], owner_key, "billing")
    developer = await join(platform, browsers[1], owner_key, "developer")
    r = await client.patch(
        f"{API}/customer/me/notifications",
        json={"balance_low_threshold_cents": 500},
        headers=bearer(owner_key),
    )
    assert r.status_code == 200, r.text
    await account.key(name="deploy")  # api_key.created: developers' kind, not billing's
    await account.credit(1000)
    async with platform.db.unit_of_work() as uow:  # wallet.balance_low: billing's kind, not developers'
        await wallet.debit(uow.session, account.customer_id, 600, "adjustment", "test debit")
        await uow.commit()
    key_mail, low_mail = "API key “deploy” created", "Your balance is $4.00"
    with smtp_sink() as (sink, url):
        sender = mailing(platform, url)
        for _ in range(3):  # however often the job runs
            await deliver(sender)
        holder = subjects(sink, account.email)
        assert holder.count(key_mail) == 1 and holder.count(low_mail) == 1, holder
        assert f"{billing} joined your ProxyPlane account as billing" in holder
        assert f"{developer} joined your ProxyPlane account as developer" in holder
        assert [s for s in subjects(sink, billing) if s in (key_mail, low_mail)] == [low_mail]
        assert [s for s in subjects(sink, developer) if s in (key_mail, low_mail)] == [key_mail]
        mine = next(m for m in sink.to(billing) if str(m["Subject"]).strip() == low_mail)
        assert f"as billing of the ProxyPlane account {account.email}" in parts(mine)[0]
        # the member's one-click unsubscribe turns the kind off for the member alone
        unsubscribe = mine["List-Unsubscribe"].strip("<>").removeprefix("http://testserver")
        async with httpx.AsyncClient(transport=client._transport, base_url="http://testserver") as bare:
            one_click = await bare.post(
                unsubscribe,
                content=b"List-Unsubscribe=One-Click",
                headers={"content-type": "application/x-www-form-urlencoded"},
            )
        assert one_click.status_code == 200 and billing in one_click.text
        await account.credit(2000)
        async with platform.db.unit_of_work() as uow:  # below the threshold again: 2400 -> 300
            await wallet.debit(uow.session, account.customer_id, 2100, "adjustment", "test debit")
            await uow.commit()
        # the owner makes the developer a viewer and removes the billing member: both are told
        items = (await members(client, owner_key))["items"]
        assert isinstance(items, list)
        listed = {m["email"]: m["member_id"] for m in items}
        r = await client.patch(
            f"{API}/customer/me/members/{listed[developer]}",
            json={"role": "viewer"},
            headers=bearer(owner_key),
        )
        assert r.status_code == 200, r.text
        r = await client.delete(f"{API}/customer/me/members/{listed[billing]}", headers=bearer(owner_key))
        assert r.status_code == 200, r.text
        await deliver(sender)
        assert subjects(sink, account.email).count("Your balance is $3.00") == 1
        assert "Your balance is $3.00" not in subjects(sink, billing)  # unsubscribed
        assert f"Your role on the ProxyPlane account {account.email} is now viewer" in subjects(
            sink, developer
        )
        gone = [m for m in sink.to(billing) if str(m["Subject"]).strip().startswith("You no longer act on")]
        assert len(gone) == 1 and "stopped working" in parts(gone[0])[0]
        assert gone[0]["List-Unsubscribe"] is None  # an account message, not a notification


async def test_expiry_reminders_reach_the_roles_that_renew_once_each(
    platform: Platform, client: httpx.AsyncClient, browsers: list[httpx.AsyncClient]
) -> None:
    b = await buy(client, platform, country="EE", count=8, stock=8)
    billing = await join(platform, browsers[0], b.key, "billing")
    viewer = await join(platform, browsers[1], b.key, "viewer")
    end = (await load(platform, b.sid)).current_period_end
    assert end is not None
    for hours in (70, 69, 60):  # three renewal passes inside the 3-day window
        await run_once(platform, end - timedelta(hours=hours))
    with smtp_sink() as (sink, url):
        await deliver(mailing(platform, url))
        for to in (b.account.email, billing):
            expiring = [s for s in subjects(sink, to) if "ends in" in s]
            assert len(expiring) == 1 and expiring[0].endswith("ends in 3 days"), (to, expiring)
        mine = next(m for m in sink.to(billing) if "ends in" in str(m["Subject"]))
        assert f"as billing of the ProxyPlane account {b.account.email}" in parts(mine)[0]
        assert not [s for s in subjects(sink, viewer) if "ends in" in s]  # a viewer renews nothing
