"""After a dashboard sign-in: the account's activity log notes it (issue 34.5), and the "sign-in from a new
address" notification (issue 34) goes out when this address never signed in to the account before (and the
account has signed in from elsewhere)."""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.core.clock import utcnow
from proxyplane.domains.mail import notify
from proxyplane.domains.mail.outbox import queue
from proxyplane.platform import Platform
from proxyplane.storage.models import Customer, LoginEvent


async def after_sign_in(
    session: AsyncSession, platform: Platform, customer: Customer, ip: str, agent: str
) -> None:
    from proxyplane.domains.team.activity import note_action
    from proxyplane.ops import Caller

    who = Caller(customer.id, client_ip=ip, channel="web", user_agent=agent, actor=customer.email)
    await note_action(session, customer.id, None, who, "signed_in", agent[:200])
    ok = (LoginEvent.customer_id == customer.id, LoginEvent.success == 1)
    here = select(func.count()).where(*ok, LoginEvent.client_ip == ip[:45])
    everywhere = select(func.count()).where(*ok)
    if (
        int((await session.execute(here)).scalar_one()) > 1
        or int((await session.execute(everywhere)).scalar_one()) <= 1
    ):
        return  # a known address, or the very first sign-in (the sign-up's)
    if "new_sign_in" in await notify.email_off(session, customer.id):
        return
    links = notify.Links(platform.settings.base_url(), platform.secret_key)
    mail = notify.notification(
        links,
        customer.id,
        customer.email,
        "new_sign_in",
        f"New sign-in to your ProxyPlane account from {ip}",
        [
            f"Your account was signed in to from {ip}, an address not seen before, "
            f"on {notify.day(utcnow())}.",
            f"Browser: {agent[:200] or 'unknown'}",
            "If this was not you, change your password now and turn on two-factor sign-in.",
        ],
        "/security",
        "Review your account security",
    )
    await queue(session, mail, sender=platform.settings.mail_from, customer_id=customer.id)
