"""The operator's view of the email outbox (`proxyplane admin outbox list|show|retry`): all three are
also served by the operator API and the console (/admin/outbox, a failed message's "Send again"). With no
SMTP configured every message waits here, links included, so the whole sign-up / reset flow works on one
machine; a refused message shows the server's answer."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field
from sqlalchemy import select

from proxyplane.core.errors import NotFound
from proxyplane.ops import OPERATOR_DOORS, Context, Effect, operator_op, register
from proxyplane.storage.models.mail import EmailMessage
from proxyplane.storage.repos import mail as repo

STATUSES = ("pending", "sending", "sent", "failed")


class OutboxQuery(BaseModel):
    status: str | None = Field(default=None, pattern="^(pending|sending|sent|failed)$")
    to: str | None = Field(default=None, description="only messages to this address")
    limit: int = Field(default=50, ge=1, le=500)


class MessageRef(BaseModel):
    message_id: int


def _row(m: EmailMessage) -> dict[str, Any]:
    return {
        "id": m.id,
        "to": m.to_address,
        "kind": m.kind,
        "subject": m.subject,
        "status": m.status,
        "attempts": m.attempts,
        "next_attempt_at": m.next_attempt_at.isoformat() if m.status == "pending" else None,
        "server_answer": m.last_error,
        "created_at": m.created_at.isoformat(),
        "sent_at": m.sent_at.isoformat() if m.sent_at else None,
    }


async def outbox_list(ctx: Context, q: OutboxQuery) -> dict[str, Any]:
    stmt = select(EmailMessage).order_by(EmailMessage.id.desc()).limit(q.limit)
    if q.status:
        stmt = stmt.where(EmailMessage.status == q.status)
    if q.to:
        stmt = stmt.where(EmailMessage.to_address == q.to.strip().lower())
    rows = (await ctx.session.execute(stmt)).scalars().all()
    return {"items": [_row(m) for m in rows], "limit": q.limit}


async def _get(ctx: Context, message_id: int) -> EmailMessage:
    row: EmailMessage | None = await ctx.session.get(EmailMessage, message_id)
    if row is None:
        raise NotFound(f"no message {message_id} in the outbox")
    return row


async def outbox_show(ctx: Context, data: MessageRef) -> dict[str, Any]:
    m = await _get(ctx, data.message_id)
    body = {"text": m.text_body, "html": m.html_body}
    return {**_row(m), "message_id": m.message_id, "headers": m.headers, **body}


async def outbox_retry(ctx: Context, data: MessageRef) -> dict[str, Any]:
    """A failed message goes back to pending, due now (after the operator fixed the address or relay)."""
    await _get(ctx, data.message_id)
    moved = await repo.retry_now(ctx.session, [data.message_id])
    m = await _get(ctx, data.message_id)
    await ctx.session.refresh(m)
    return {**_row(m), "retried": moved == 1}


# the CLI, the operator API and the console (adapters/admin/outbox.py); a message's body holds its links (a
# password reset's too), so reading it is a permission of its own (mail.bodies: owner, admin)
OUTBOX_LIST = operator_op(
    "outbox_list", outbox_list, OutboxQuery, Effect.READ, permission="mail.read", doors=OPERATOR_DOORS
)
OUTBOX_SHOW = operator_op(
    "outbox_show", outbox_show, MessageRef, Effect.READ, permission="mail.bodies", doors=OPERATOR_DOORS
)
# retrying sends the message to the address it was queued for, nobody else: support may (mail.retry)
OUTBOX_RETRY = operator_op(
    "outbox_retry", outbox_retry, MessageRef, permission="mail.retry", doors=OPERATOR_DOORS
)
register(OUTBOX_LIST, OUTBOX_SHOW, OUTBOX_RETRY)
