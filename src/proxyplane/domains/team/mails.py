"""What team members are told by email (issue 34.5), through the outbox in the change's own transaction
(a rolled-back change sends nothing): a member whose role changed or who was removed; the account's
address when someone joined or left. These are account messages (no unsubscribe), as the invitation is.
The account's notifications reach members through the notification pass (domains/mail/passes.py) by
role (roles.ROLE_KINDS)."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.domains.mail.compose import render
from proxyplane.domains.mail.outbox import queue
from proxyplane.platform import Platform
from proxyplane.storage.models import Customer
from proxyplane.storage.repos import team as repo

KIND = "team_change"


async def tell(
    platform: Platform, session: AsyncSession, account_id: int, to: str, subject: str, lines: list[str]
) -> None:
    mail = render(
        "notice",
        KIND,
        to,
        subject,
        lines=lines,
        action_url=f"{platform.settings.base_url()}/team",
        action_label="See the team",
        footer=["You get this because it changes who acts on a ProxyPlane account."],
    )
    await queue(session, mail, sender=platform.settings.mail_from, customer_id=account_id)


async def address(session: AsyncSession, account: Customer) -> str:
    """Where the account's own messages go: its holder member's sign-in once handed over, else its own."""
    if account.holder_member_id is None:
        return account.email
    found = await repo.holder_addresses(session, {account.holder_member_id})
    return found.get(account.holder_member_id, account.email)
