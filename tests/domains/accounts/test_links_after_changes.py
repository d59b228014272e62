"""A password-reset link stops working once what it was sent for has changed (found by h3's review): the
account's address changed (the link went to the old mailbox) or its password was changed by the
customer. Links are read from the outbox, as the operator would with no SMTP configured."""

from __future__ import annotations

import re

import pytest
from sqlalchemy import select

from proxyplane.domains.accounts import recovery, web_ops
from proxyplane.ops import Caller, invoke
from proxyplane.platform import Platform
from proxyplane.storage.models.mail import EmailMessage
from tests.support import Account, make_account, unique_email

pytestmark = pytest.mark.anyio
ANON = Caller(customer_id=None, client_ip="127.0.0.44", channel="web", user_agent="pytest")


def _me(account: Account) -> Caller:
    return Caller(customer_id=account.customer_id, client_ip="127.0.0.44", channel="web")


async def _token(platform: Platform, to: str, kind: str, path: str) -> str:
    async with platform.db.unit_of_work(write=False) as uow:
        text = (
            await uow.session.execute(
                select(EmailMessage.text_body)
                .where(EmailMessage.to_address == to, EmailMessage.kind == kind)
                .order_by(EmailMessage.id.desc())
                .limit(1)
            )
        ).scalar_one()
    found = re.search(rf"{path}/(\S+)", text)
    assert found, text
    return found.group(1)


async def _reset_link(platform: Platform, account: Account) -> str:
    await invoke(platform, recovery.FORGOT_PASSWORD, ANON, recovery.ByEmail(email=account.email))
    token = await _token(platform, account.email, "reset_password", "/reset-password")
    assert (await invoke(platform, recovery.CHECK_RESET, ANON, recovery.Link(token=token))).outcome == "ok"
    return token


async def test_a_reset_link_to_the_old_address_dies_with_the_address_change(platform: Platform) -> None:
    account = await make_account(platform)
    old_link = await _reset_link(platform, account)
    new = unique_email()
    change = recovery.EmailChange(new_email=new, current_password=account.password)
    assert (await invoke(platform, recovery.CHANGE_EMAIL, _me(account), change)).outcome == "sent"
    confirm = await _token(platform, new, "change_email", "/confirm-email")
    assert (
        await invoke(platform, recovery.CONFIRM_EMAIL, ANON, recovery.Link(token=confirm))
    ).outcome == "ok"
    reset = recovery.NewPassword(token=old_link, new_password="taken over by the old mailbox")
    assert (await invoke(platform, recovery.RESET_PASSWORD, ANON, reset)).outcome != "ok"
    signed = await invoke(
        platform, web_ops.SIGN_IN, ANON, web_ops.SignIn(email=new, password=account.password)
    )
    assert signed.outcome == "ok"  # the password is still the customer's own


async def test_a_reset_link_dies_when_the_customer_changes_the_password(platform: Platform) -> None:
    account = await make_account(platform)
    old_link = await _reset_link(platform, account)
    mine = "the customer's new password"
    change = web_ops.PasswordChange(current_password=account.password, new_password=mine)
    assert (await invoke(platform, web_ops.CHANGE_PASSWORD, _me(account), change)).outcome == "ok"
    reset = recovery.NewPassword(token=old_link, new_password="an attacker's password")
    assert (await invoke(platform, recovery.RESET_PASSWORD, ANON, reset)).outcome != "ok"
    signed = await invoke(platform, web_ops.SIGN_IN, ANON, web_ops.SignIn(email=account.email, password=mine))
    assert signed.outcome == "ok"
