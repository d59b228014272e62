"""Issue 34 against a real SMTP server on loopback (aiosmtpd): the sign-up's verification link, the
password reset, the email change; each message arrives once, with the right link, and the links work
once (a second use, an expired link: a page that says so and offers a new one)."""

from __future__ import annotations

import re
from datetime import timedelta

import httpx
import pytest
from sqlalchemy import select

from proxyplane.core.clock import utcnow
from proxyplane.core.errors import Forbidden
from proxyplane.domains.accounts import recovery, web_ops
from proxyplane.domains.orders import context as order_context
from proxyplane.ops import Caller, invoke
from proxyplane.platform import Platform
from proxyplane.storage.models import Customer, WebSession
from proxyplane.storage.repos import account_security
from tests.jobs.mail_support import deliver, mailing
from tests.jobs.smtp_sink import link, parts, smtp_sink
from tests.support import make_account, unique_email

pytestmark = pytest.mark.anyio
ANON = Caller(customer_id=None, client_ip="127.0.0.9", channel="web", user_agent="pytest")


async def _customer(platform: Platform, customer_id: int) -> Customer:
    async with platform.db.unit_of_work(write=False) as uow:
        found = await uow.session.get(Customer, customer_id)
        assert found is not None
        return found


async def _csrf(client: httpx.AsyncClient, path: str) -> str:
    page = await client.get(path)
    assert page.status_code == 200, page.text
    found = re.search(r'name="csrf" value="([^"]+)"', page.text)
    assert found is not None
    return found.group(1)


async def test_sign_up_verification_link_arrives_once_and_verifies(
    platform: Platform, client: httpx.AsyncClient
) -> None:
    email = unique_email()
    signed = await invoke(
        platform, web_ops.SIGN_UP, ANON, web_ops.SignUp(email=email, name="Ada", password="a good password")
    )
    assert signed.customer_id is not None
    async with platform.db.unit_of_work(write=False) as uow:  # unverified: no order
        with pytest.raises(Forbidden) as refused:
            await order_context.load(uow.session, signed.customer_id, "proxy_datacenter", None)
    assert refused.value.extra["reason"] == "email_unverified"
    with smtp_sink() as (sink, url):
        sender = mailing(platform, url)
        await deliver(sender)
        await deliver(sender)  # a second run sends nothing again
        got = sink.to(email)
        assert len(got) == 1
        assert got[0]["Subject"] == "Confirm your email address"
        assert got[0]["List-Unsubscribe"] is None  # an account email, not a notification
        verify = link(got[0], "/verify-email/")
    assert verify.startswith("http://testserver/verify-email/")
    opened = await client.get(verify.removeprefix("http://testserver"))
    assert opened.status_code == 303
    assert (await _customer(platform, signed.customer_id)).email_verified_at is not None
    again = await client.get(verify.removeprefix("http://testserver"))
    assert again.status_code == 410
    assert "already used" in again.text and 'href="/verify-email-again"' in again.text
    async with platform.db.unit_of_work(write=False) as uow:  # verified: the order may go on
        await order_context.load(uow.session, signed.customer_id, "proxy_datacenter", None)


async def test_password_reset_once_same_answer_other_sessions_end(
    platform: Platform, client: httpx.AsyncClient
) -> None:
    account = await make_account(platform)
    nobody = unique_email()
    for _ in range(2):  # two signed-in browsers
        ok = await invoke(
            platform, web_ops.SIGN_IN, ANON, web_ops.SignIn(email=account.email, password=account.password)
        )
        assert ok.outcome == "ok"
    known = await invoke(platform, recovery.FORGOT_PASSWORD, ANON, recovery.ByEmail(email=account.email))
    unknown = await invoke(platform, recovery.FORGOT_PASSWORD, ANON, recovery.ByEmail(email=nobody))
    assert known == unknown
    page = await client.post(
        "/forgot-password", data={"email": nobody, "csrf": await _csrf(client, "/forgot-password")}
    )
    assert page.status_code == 200 and "If an account uses that address" in page.text
    with smtp_sink() as (sink, url):
        await deliver(mailing(platform, url))
        assert sink.to(nobody) == []
        got = sink.to(account.email)
        assert [m["Subject"] for m in got] == ["Reset your ProxyPlane password"]
        reset = link(got[0], "/reset-password/").removeprefix("http://testserver")
        csrf = await _csrf(client, reset)
        new = "a brand new password"
        done = await client.post(reset, data={"csrf": csrf, "new_password": new, "new_password2": new})
        assert done.status_code == 303 and done.headers["location"] == "/login"
        await deliver(mailing(platform, url))
        assert [m["Subject"] for m in sink.to(account.email)][1:] == ["Your password was changed"]
    async with platform.db.unit_of_work(write=False) as uow:
        live = await uow.session.execute(
            select(WebSession).where(
                WebSession.customer_id == account.customer_id, WebSession.revoked_at.is_(None)
            )
        )
        assert live.scalars().all() == []  # every session ended
    old = await invoke(
        platform, web_ops.SIGN_IN, ANON, web_ops.SignIn(email=account.email, password=account.password)
    )
    assert old.outcome == "wrong"
    fresh = await invoke(platform, web_ops.SIGN_IN, ANON, web_ops.SignIn(email=account.email, password=new))
    assert fresh.outcome == "ok"
    reused = await client.get(reset)
    assert reused.status_code == 410 and "already used" in reused.text and "/forgot-password" in reused.text
    async with platform.db.unit_of_work() as uow:  # a link past its lifetime
        raw = await account_security.new_token(
            uow.session, account.customer_id, recovery.RESET, account.email, utcnow(), timedelta(seconds=-1)
        )
        await uow.commit()
    expired = await client.get(f"/reset-password/{raw}")
    assert expired.status_code == 410 and "expired" in expired.text and "/forgot-password" in expired.text


async def test_email_change_confirms_new_address_and_tells_the_old(
    platform: Platform, client: httpx.AsyncClient
) -> None:
    account = await make_account(platform)
    new = unique_email()
    me = Caller(customer_id=account.customer_id, client_ip="127.0.0.9", channel="web")
    change = recovery.EmailChange(new_email=new, current_password=account.password)
    assert (await invoke(platform, recovery.CHANGE_EMAIL, me, change)).outcome == "sent"
    assert (await _customer(platform, account.customer_id)).email == account.email  # not before the link
    with smtp_sink() as (sink, url):
        sender = mailing(platform, url)
        await deliver(sender)
        got = sink.to(new)
        assert [m["Subject"] for m in got] == ["Confirm your new email address"]
        confirm = link(got[0], "/confirm-email/").removeprefix("http://testserver")
        assert (await client.get(confirm)).status_code == 303
        await deliver(sender)
        told = sink.to(account.email)
        assert [m["Subject"] for m in told] == ["Your ProxyPlane email address was changed"]
        assert new in parts(told[0])[0]
        assert len(sink.to(new)) == 1
    changed = await _customer(platform, account.customer_id)
    assert changed.email == new and changed.email_verified_at is not None
    assert (await client.get(confirm)).status_code == 410
