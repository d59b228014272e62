"""`proxyplane admin outbox list|show|retry`: the email outbox for the operator; flags in, JSON out,
over the registered operator operations (domains/mail/operator_ops.py, "cli" door only)."""

from __future__ import annotations

import click

from proxyplane.cli.admin import admin
from proxyplane.cli.common import echo_json, operator_call
from proxyplane.domains.mail.operator_ops import STATUSES


@admin.group()
def outbox() -> None:
    """Email outbox: every message sent or waiting (all of them when no SMTP is configured)."""


@outbox.command("list")
@click.option("--status", type=click.Choice(STATUSES), default=None, help="only this status")
@click.option("--to", "to", default=None, help="only messages to this address")
@click.option("--limit", default=50, type=click.IntRange(1, 500))
def outbox_list(status: str | None, to: str | None, limit: int) -> None:
    """List messages, newest first (status, attempts, the SMTP server's answer)."""
    echo_json(operator_call("operator_outbox_list", status=status, to=to, limit=limit))


@outbox.command("show")
@click.argument("message_id", type=int)
def outbox_show(message_id: int) -> None:
    """Print one message with its headers, text and HTML."""
    echo_json(operator_call("operator_outbox_show", message_id=message_id))


@outbox.command("retry")
@click.argument("message_id", type=int)
def outbox_retry(message_id: int) -> None:
    """Send a failed message again (pending, due now)."""
    echo_json(operator_call("operator_outbox_retry", message_id=message_id))
