"""`proxyplane admin ticket list|show|reply|close`: the operator side of support tickets; flags in, JSON
out, over the registered operator operations (domains/tickets/operator_ops.py, "cli" door only)."""

from __future__ import annotations

import uuid

import click

from proxyplane.cli.admin import admin
from proxyplane.cli.common import echo_json, fail, operator_call
from proxyplane.domains.tickets.service import STATUSES


def _id(value: str) -> uuid.UUID:
    try:
        return uuid.UUID(value)
    except ValueError:
        fail(f"not a ticket id: {value!r}")
        raise


@admin.group()
def ticket() -> None:
    """Support tickets: list, show, reply (emits ticket.replied), close."""


@ticket.command("list")
@click.option("--status", type=click.Choice(STATUSES), default=None, help="only this status")
@click.option("--email", default=None, help="only this customer's tickets")
@click.option("--assigned", default="", help="an operator's email (their tickets) or 'nobody' (unassigned)")
@click.option("--limit", default=50, type=click.IntRange(1, 500))
def ticket_list(status: str | None, email: str | None, assigned: str, limit: int) -> None:
    """List tickets, most recently updated first."""
    found = operator_call("operator_ticket_list", status=status, email=email, assigned=assigned, limit=limit)
    echo_json(found)


@ticket.command("show")
@click.argument("ticket_id")
def ticket_show(ticket_id: str) -> None:
    """Print a ticket with its messages."""
    echo_json(operator_call("operator_ticket_show", ticket_id=_id(ticket_id)))


@ticket.command("reply")
@click.argument("ticket_id")
@click.option("--message", required=True, help="the reply the customer will read")
def ticket_reply(ticket_id: str, message: str) -> None:
    """Answer a ticket as support; the customer gets a ticket.replied event."""
    if not message.strip():
        fail("the message is empty")
    echo_json(operator_call("operator_ticket_reply", ticket_id=_id(ticket_id), message=message))


@ticket.command("close")
@click.argument("ticket_id")
def ticket_close(ticket_id: str) -> None:
    """Close a ticket (a customer reply reopens it)."""
    echo_json(operator_call("operator_ticket_close", ticket_id=_id(ticket_id)))
