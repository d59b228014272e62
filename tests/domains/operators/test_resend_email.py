"""Resending a customer's verification or password-reset email (issue 33): queued in the email outbox
to the customer's address (the link never in the answer nor the audit row), at most 3 an hour, refused
for a verified address; on the operator API (support may, finance may not) and the console buttons."""

from __future__ import annotations

import re

import httpx
import pytest
from sqlalchemy import select, update

from proxyplane.core.errors import Conflict, RateLimited
from proxyplane.platform import Platform
from proxyplane.storage.models import Customer
from proxyplane.storage.models.mail import EmailMessage
from tests.adapters.admin.test_console import csrf, sign_in
from tests.domains.operators.helpers import make_operator, run
from tests.support import Account, bearer

pytestmark = pytest.mark.anyio


async def outbox(platform: Platform, account: Account) -> list[EmailMessage]:
    async with platform.db.unit_of_work(write=False) as uow:
        rows = await uow.session.execute(
            select(EmailMessage)
            .where(EmailMessage.customer_id == account.customer_id)
            .order_by(EmailMessage.id)
        )
        return list(rows.scalars().all())


async def unverified(platform: Platform, account: Account) -> None:
    async with platform.db.unit_of_work() as uow:
        await uow.session.execute(
            update(Customer).where(Customer.id == account.customer_id).values(email_verified_at=None)
        )
        await uow.commit()


async def test_reset_email_queued_audited_and_capped(platform: Platform, account: Account) -> None:
    before = len(await outbox(platform, account))
    done = await run(
        platform, "operator_customer_resend_email", customer_id=account.customer_id, kind="password_reset"
    )
    assert done == {"customer_id": account.customer_id, "kind": "password_reset", "queued_to": account.email}
    mails = (await outbox(platform, account))[before:]
    assert len(mails) == 1 and mails[0].to_address == account.email and "/reset" in mails[0].text_body
    link = re.search(r"https?://\S+", mails[0].text_body)
    assert link is not None
    entries = (await run(platform, "operator_audit_list", target=f"customer:{account.customer_id}"))[
        "entries"
    ]
    entry = next(e for e in entries if e["action"] == "operator_customer_resend_email")
    assert entry["after"]["queued_to"] == account.email and link.group(0) not in str(entry)
    for _ in range(2):
        await run(
            platform, "operator_customer_resend_email", customer_id=account.customer_id, kind="password_reset"
        )
    with pytest.raises(RateLimited):
        await run(
            platform, "operator_customer_resend_email", customer_id=account.customer_id, kind="password_reset"
        )
    assert len(await outbox(platform, account)) - before == 3


async def test_verification_only_for_an_unverified_address(platform: Platform, account: Account) -> None:
    await unverified(platform, account)
    before = len(await outbox(platform, account))
    await run(
        platform, "operator_customer_resend_email", customer_id=account.customer_id, kind="verification"
    )
    mails = (await outbox(platform, account))[before:]
    assert len(mails) == 1 and mails[0].to_address == account.email and "/verify" in mails[0].text_body
    async with platform.db.unit_of_work() as uow:
        await uow.session.execute(
            update(Customer)
            .where(Customer.id == account.customer_id)
            .values(email_verified_at=Customer.created_at)
        )
        await uow.commit()
    with pytest.raises(Conflict):
        await run(
            platform, "operator_customer_resend_email", customer_id=account.customer_id, kind="verification"
        )


async def test_operator_api_and_console(
    client: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    _, _, support = await make_operator(platform, "support")
    _, _, finance = await make_operator(platform, "finance")
    body = {"customer_id": account.customer_id, "kind": "password_reset"}
    sent = await client.post("/api/admin/v1/customer_resend_email", json=body, headers=bearer(support))
    assert sent.status_code == 200 and sent.json()["queued_to"] == account.email
    refused = await client.post("/api/admin/v1/customer_resend_email", json=body, headers=bearer(finance))
    assert refused.status_code == 403 and refused.json()["detail"]["missing_permission"] == "customers.email"
    await unverified(platform, account)
    await sign_in(client, platform, "support")
    page = await client.get(f"/admin/customers/{account.customer_id}")
    assert 'id="email-verification"' in page.text and 'id="email-password_reset"' in page.text
    token = re.search(r'name="form_token" value="([^"]+verification)"', page.text)
    assert token is not None
    form = {"csrf": csrf(page.text), "form_token": token.group(1), "kind": "verification"}
    done = await client.post(f"/admin/customers/{account.customer_id}/email", data=form)
    assert done.status_code == 303 and "verification+email+queued" in done.headers["location"]
    again = await client.post(f"/admin/customers/{account.customer_id}/email", data=form)
    assert again.status_code == 409  # the same form queues once
    kinds = [m.subject for m in await outbox(platform, account)]
    assert kinds.count("Confirm your email address") == 1
