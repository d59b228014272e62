"""Issue 34: the email outbox in the console. A message the SMTP server refused shows as failed with the
server's answer; a sign-up's verification link waits in the outbox (no SMTP) and an admin reads it; support
sees the list but not the bodies (mail.bodies); finance does not see the outbox (mail.read)."""

from __future__ import annotations

import re

import httpx
import pytest

from proxyplane.platform import Platform
from tests.adapters.admin.test_console import sign_in
from tests.adapters.web.helpers import csrf_of
from tests.jobs.mail_support import deliver, mailing
from tests.jobs.smtp_sink import smtp_sink
from tests.support import make_account, unique_email

pytestmark = pytest.mark.anyio


@pytest.fixture
async def operator(client: httpx.AsyncClient) -> httpx.AsyncClient:
    """A second browser for the operator (the first signs a customer up)."""
    return httpx.AsyncClient(transport=client._transport, base_url="http://testserver")


async def test_outbox_page_shows_failures_and_links_by_permission(
    platform: Platform, client: httpx.AsyncClient, operator: httpx.AsyncClient
) -> None:
    account = await make_account(platform)
    await account.key(name="refused")  # an api_key_created notification to the account
    with smtp_sink() as (sink, url):
        sink.refuse[account.email] = "550 5.1.1 mailbox unavailable"
        await deliver(mailing(platform, url))
    email = unique_email()  # a dashboard sign-up: its verification link waits (no SMTP configured here)
    page = await client.get("/signup")
    form = {
        "csrf": csrf_of(page),
        "email": email,
        "password": "a long password",
        "password2": "a long password",
    }
    assert (await client.post("/signup", data=form)).status_code == 303

    async with operator:
        await sign_in(operator, platform, "admin")
        listed = await operator.get(f"/admin/outbox?status=failed&to={account.email}")
        assert listed.status_code == 200
        assert "550 5.1.1 mailbox unavailable" in listed.text and "api_key_created" in listed.text
        waiting = await operator.get(f"/admin/outbox?to={email}")
        found = re.search(r'<a href="/admin/outbox/(\d+)">', waiting.text)
        assert found and "verify_email" in waiting.text and "pending" in waiting.text
        shown = await operator.get(f"/admin/outbox/{found.group(1)}")
        assert shown.status_code == 200 and "/verify-email/" in shown.text and email in shown.text
        assert 'href="/admin/outbox"' in shown.text  # the menu links the page

    async with httpx.AsyncClient(transport=client._transport, base_url="http://testserver") as support:
        await sign_in(support, platform, "support")
        listed = await support.get(f"/admin/outbox?to={email}")
        assert listed.status_code == 200 and "verify_email" in listed.text
        assert "/admin/outbox/" + found.group(1) not in listed.text  # no link to the body
        body = await support.get(f"/admin/outbox/{found.group(1)}")
        assert body.status_code == 403 and "mail.bodies" in body.text and "/verify-email/" not in body.text
    async with httpx.AsyncClient(transport=client._transport, base_url="http://testserver") as finance:
        await sign_in(finance, platform, "finance")
        refused = await finance.get("/admin/outbox")
        assert refused.status_code == 403 and "mail.read" in refused.text


async def test_a_refused_message_is_sent_again_from_the_console(
    platform: Platform, client: httpx.AsyncClient
) -> None:
    """Support (mail.retry) presses "Send again" on a failed message once the relay takes it: pending,
    then sent, once; the same form sent twice acts once; a viewer sees no button and is refused."""
    account = await make_account(platform)
    await account.key(name="refused first")
    with smtp_sink() as (sink, url):
        sink.refuse[account.email] = "550 5.1.1 mailbox unavailable"
        await deliver(mailing(platform, url))
    async with httpx.AsyncClient(transport=client._transport, base_url="http://testserver") as viewer:
        await sign_in(viewer, platform, "viewer")
        seen = await viewer.get(f"/admin/outbox?to={account.email}")
        assert "550 5.1.1 mailbox unavailable" in seen.text and "Send again" not in seen.text
        found = re.search(r'<tr data-message="(\d+)">', seen.text)
        assert found
        refused = await viewer.post(f"/admin/outbox/{found.group(1)}/retry", data={"csrf": csrf_of(seen)})
        assert refused.status_code == 403 and "mail.retry" in refused.text
    async with httpx.AsyncClient(transport=client._transport, base_url="http://testserver") as support:
        await sign_in(support, platform, "support")
        listed = await support.get(f"/admin/outbox?status=failed&to={account.email}")
        action = f'action="/admin/outbox/{found.group(1)}/retry"'
        assert action in listed.text and "Send again" in listed.text
        token = re.search(action + r'.*?name="form_token" value="([^"]+)"', listed.text)
        assert token
        form = {"csrf": csrf_of(listed), "form_token": token.group(1)}
        done = await support.post(f"/admin/outbox/{found.group(1)}/retry", data=form)
        assert done.status_code == 303 and "queued+again" in done.headers["location"]
        page = await support.get(done.headers["location"])
        assert "queued again" in page.text and "pending" in page.text and "Send again" not in page.text
        twice = await support.post(f"/admin/outbox/{found.group(1)}/retry", data=form)
        assert twice.status_code in (303, 409)
    with smtp_sink() as (sink, url):
        await deliver(mailing(platform, url))
        assert len(sink.to(account.email)) == 1
