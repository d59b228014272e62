"""Queue a rendered message in the stored outbox, in the caller's transaction: a rolled-back change sends
nothing, a committed one cannot lose its email. The mail job (jobs/mail.py) sends it."""

from __future__ import annotations

from email.utils import make_msgid, parseaddr

from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.domains.mail.compose import Mail
from proxyplane.storage.repos import mail as repo


def sender_domain(sender: str) -> str:
    address = parseaddr(sender)[1]
    return address.rpartition("@")[2] or "proxyplane.localhost"


async def queue(
    session: AsyncSession,
    mail: Mail,
    *,
    sender: str,
    customer_id: int | None,
    dedupe_key: str | None = None,
) -> int | None:
    """The message's outbox id, or None when `dedupe_key` was queued already (nothing written)."""
    return await repo.queue(
        session,
        {
            "customer_id": customer_id,
            "to_address": mail.to,
            "kind": mail.kind,
            "subject": mail.subject[:300],
            "text_body": mail.text,
            "html_body": mail.html,
            "headers": dict(mail.headers),
            "dedupe_key": dedupe_key,
            "message_id": make_msgid(domain=sender_domain(sender)),
        },
    )
