"""The renewal job's expiry reminders (issue 34): a service ending in 3 days produces exactly one
reminder however often the job runs, then one more a day before; an auto-renewing service with the
balance for its renewal gets none."""

from __future__ import annotations

from datetime import timedelta

import httpx
import pytest
from sqlalchemy import select

from proxyplane.jobs.renewals import run_once
from proxyplane.platform import Platform
from proxyplane.storage.models import Event
from proxyplane.storage.models.mail import EmailMessage
from tests.adapters.rest.growth_support import API, buy, load
from tests.jobs.mail_support import deliver, mailing
from tests.jobs.smtp_sink import link, parts, smtp_sink

pytestmark = pytest.mark.anyio


async def _reminders(platform: Platform, to: str) -> list[EmailMessage]:
    async with platform.db.unit_of_work(write=False) as uow:
        rows = await uow.session.execute(
            select(EmailMessage)
            .where(EmailMessage.to_address == to, EmailMessage.kind == "service_expiring")
            .order_by(EmailMessage.id)
        )
        return list(rows.scalars())


async def test_three_days_then_one_day_exactly_once_each(
    client: httpx.AsyncClient, platform: Platform
) -> None:
    b = await buy(client, platform, country="IS", count=8, stock=8)
    end = (await load(platform, b.sid)).current_period_end
    assert end is not None
    for hours in (70, 69, 60, 30):  # four passes inside the 3-day window
        await run_once(platform, end - timedelta(hours=hours))
    rows = await _reminders(platform, b.account.email)
    assert len(rows) == 1 and rows[0].subject.endswith("ends in 3 days")
    assert rows[0].dedupe_key is not None and rows[0].dedupe_key.endswith(":3d")
    for hours in (23, 10, 2):
        await run_once(platform, end - timedelta(hours=hours))
    rows = await _reminders(platform, b.account.email)
    assert [r.subject.rsplit(" ", 2)[-2:] for r in rows] == [["3", "days"], ["1", "day"]]
    with smtp_sink() as (sink, url):
        await deliver(mailing(platform, url))
        got = sink.to(b.account.email)
        expiring = [m for m in got if "ends in" in str(m["Subject"])]
        assert len(expiring) == 2
        assert link(expiring[0], f"/services/{b.sid}") == f"http://testserver/services/{b.sid}"
        assert expiring[0]["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"


async def test_auto_renew_with_the_balance_gets_no_reminder(
    client: httpx.AsyncClient, platform: Platform
) -> None:
    b = await buy(client, platform, country="NZ", count=8, stock=8)
    r = await client.put(
        f"{API}/customer/services/{b.sid}/auto-renew", json={"auto_renew": True}, headers=b.headers
    )
    assert r.status_code == 200
    end = (await load(platform, b.sid)).current_period_end
    assert end is not None
    await run_once(platform, end - timedelta(hours=70))
    assert await _reminders(platform, b.account.email) == []


async def test_a_failed_auto_renewal_is_mailed_once_with_the_amount_short(
    client: httpx.AsyncClient, platform: Platform
) -> None:
    """Auto-renew on, 10 cents left: the renewal job's passes in the renewal window fail it (one
    service.renewal_failed per term) and the customer gets one email naming the price, the balance and the
    amount short, linking to the wallet, however often the job and the mail passes run."""
    b = await buy(client, platform, country="LV", count=8, stock=8, credit=130)
    r = await client.put(
        f"{API}/customer/services/{b.sid}/auto-renew", json={"auto_renew": True}, headers=b.headers
    )
    assert r.status_code == 200, r.text
    end = (await load(platform, b.sid)).current_period_end
    assert end is not None
    with smtp_sink() as (sink, url):
        sender = mailing(platform, url)
        for hours in (20, 12, 3):  # three passes inside the renewal window, each short
            await run_once(platform, end - timedelta(hours=hours))
            await deliver(sender)
        failed = [m for m in sink.to(b.account.email) if "renewal" in str(m["Subject"])]
    async with platform.db.unit_of_work(write=False) as uow:
        [event] = (
            await uow.session.execute(
                select(Event).where(
                    Event.customer_id == b.account.customer_id, Event.type == "service.renewal_failed"
                )
            )
        ).scalars()
    required, balance = int(event.data["required_cents"]), int(event.data["balance_cents"])
    assert balance == 10 and required > balance
    short = f"${(required - balance) // 100}.{(required - balance) % 100:02d}"
    assert len(failed) == 1 and str(failed[0]["Subject"]).endswith(f"failed: {short} short")
    text, _ = parts(failed[0])
    assert f"your wallet balance is $0.10, {short} short" in text
    assert link(failed[0], "/wallet") == "http://testserver/wallet"
    assert failed[0]["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
