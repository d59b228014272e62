"""`proxyplane admin ticket list|show|reply|close`: the operator side of support tickets."""

from __future__ import annotations

import uuid
from typing import Any

import click

from proxyplane.cli.admin import admin
from proxyplane.cli.common import admin_call, echo_json, fail
from proxyplane.domains.accounts import service as accounts
from proxyplane.domains.tickets import service as tickets
from proxyplane.storage.models import Ticket


def _id(value: str) -> uuid.UUID:
    try:
        return uuid.UUID(value)
    except ValueError:
        fail(f"not a ticket id: {value!r}")
        raise


async def ticket_json(session: Any, t: Ticket, with_messages: bool) -> dict[str, Any]:
    data: dict[str, Any] = {
        "ticket_id": str(t.id),
        "customer_id": t.customer_id,
        "email": await tickets.customer_email(session, t.customer_id),
        "subject": t.subject,
        "status": t.status,
        "service_id": str(t.service_id) if t.service_id else None,
        "created_at": t.created_at.isoformat(),
        "updated_at": t.updated_at.isoformat(),
    }
    if with_messages:
        data["messages"] = [
            {"message_id": m.id, "author": m.author, "body": m.body, "created_at": m.created_at.isoformat()}
            for m in await tickets.messages(session, t)
        ]
    return data


@admin.group()
def ticket() -> None:
    """Support tickets: list, show, reply (emits ticket.replied), close."""


@ticket.command("list")
@click.option("--status", type=click.Choice(tickets.STATUSES), default=None, help="only this status")
@click.option("--email", default=None, help="only this customer's tickets")
@click.option("--limit", default=50, type=click.IntRange(1, 500))
def ticket_list(status: str | None, email: str | None, limit: int) -> None:
    """List tickets, most recently updated first."""

    async def go(session: Any, _: Any) -> Any:
        customer_id = (await accounts.require_by_email(session, email)).id if email else None
        rows, total = await tickets.list_tickets(session, customer_id, status, 0, limit)
        return {"total": total, "items": [await ticket_json(session, t, False) for t in rows]}

    echo_json(admin_call(go))


@ticket.command("show")
@click.argument("ticket_id")
def ticket_show(ticket_id: str) -> None:
    """Print a ticket with its messages."""

    async def go(session: Any, _: Any) -> Any:
        return await ticket_json(session, await tickets.get_ticket(session, None, _id(ticket_id)), True)

    echo_json(admin_call(go))


@ticket.command("reply")
@click.argument("ticket_id")
@click.option("--message", required=True, help="the reply the customer will read")
def ticket_reply(ticket_id: str, message: str) -> None:
    """Answer a ticket as support; the customer gets a ticket.replied event."""
    if not message.strip():
        fail("the message is empty")

    async def go(session: Any, _: Any) -> Any:
        t = await tickets.get_ticket(session, None, _id(ticket_id))
        await tickets.reply(session, t, tickets.SUPPORT, message)
        return await ticket_json(session, t, True)

    echo_json(admin_call(go))


@ticket.command("close")
@click.argument("ticket_id")
def ticket_close(ticket_id: str) -> None:
    """Close a ticket (a customer reply reopens it)."""

    async def go(session: Any, _: Any) -> Any:
        t = await tickets.get_ticket(session, None, _id(ticket_id))
        return await ticket_json(session, await tickets.close(session, t), False)

    echo_json(admin_call(go))
