"""`proxyplane admin operator create|list|role|lock|unlock|key|call`: the operator team (issue 33); flags in,
JSON out, over the registered operations of domains/operators/ops.py; `proxyplane admin reseller
create|list|credit|wallet` (issue 33.4, domains/operators/reseller_ops.py). The command line acts as a
local owner, audited as "cli"."""

from __future__ import annotations

import json

import click

from proxyplane.cli.admin import admin
from proxyplane.cli.common import echo_json, fail, operator_call
from proxyplane.domains.operators.roles import ROLES

ROLE = click.Choice(list(ROLES))


@admin.group()
def operator() -> None:
    """Operator accounts: create (one-time password, TOTP at first sign-in), roles, locks, API keys."""


@operator.command("create")
@click.option("--email", required=True)
@click.option("--role", required=True, type=ROLE)
def operator_create(email: str, role: str) -> None:
    """Create an operator; prints a one-time password (shown once) and the console's sign-in address."""
    echo_json(operator_call("operator_operator_create", operator_email=email, role=role))


@operator.command("list")
def operator_list() -> None:
    """Every operator with its role and status."""
    echo_json(operator_call("operator_operator_list"))


@operator.command("role")
@click.option("--email", required=True)
@click.option("--role", required=True, type=ROLE)
def operator_role(email: str, role: str) -> None:
    """Change an operator's role (the last active owner keeps theirs)."""
    echo_json(operator_call("operator_operator_set_role", operator_email=email, role=role))


@operator.command("lock")
@click.option("--email", required=True)
def operator_lock(email: str) -> None:
    """Lock an operator out: their sessions and API keys end at once (never the last active owner)."""
    echo_json(operator_call("operator_operator_lock", operator_email=email))


@operator.command("unlock")
@click.option("--email", required=True)
def operator_unlock(email: str) -> None:
    """Let a locked operator sign in again."""
    echo_json(operator_call("operator_operator_unlock", operator_email=email))


@operator.command("key")
@click.option("--email", required=True)
@click.option("--name", required=True)
@click.option("--role", required=True, type=ROLE, help="no wider than the operator's own role")
def operator_key(email: str, name: str, role: str) -> None:
    """Create an operator API key (Bearer, /api/admin/v1); prints its secret, shown only this once."""
    echo_json(operator_call("operator_operator_key_create", operator_email=email, name=name, role=role))


@operator.command("call")
@click.argument("operation")
@click.option("--input", "raw", default="{}", help="the operation's input as a JSON object")
def operator_run(operation: str, raw: str) -> None:
    """Run any operator operation served by the CLI by its registry name (e.g. operator_overview,
    operator_customer_search, operator_service_suspend) with a JSON input; prints its JSON output."""
    try:
        fields = json.loads(raw)
    except ValueError as exc:
        fail(f"--input is not JSON: {exc}")
    if not isinstance(fields, dict):
        fail("--input must be a JSON object")
    try:
        echo_json(operator_call(operation, **fields))
    except (KeyError, RuntimeError):  # unknown, or not served by the CLI
        fail(f"no operator operation {operation!r} on the command line")


@admin.group()
def reseller() -> None:
    """Resellers (issue 33.4): operators of the role "reseller" with a discount and a prepaid wallet."""


@reseller.command("create")
@click.option("--email", required=True)
@click.option("--discount", required=True, type=click.IntRange(0, 90), help="percent off face value")
def reseller_create(email: str, discount: int) -> None:
    """Create a reseller; prints a one-time password (shown once) and the console's sign-in address."""
    echo_json(operator_call("operator_reseller_create", operator_email=email, discount_percent=discount))


@reseller.command("list")
def reseller_list() -> None:
    """Every reseller with its discount, balance and number of customers."""
    echo_json(operator_call("operator_reseller_list"))


@reseller.command("credit")
@click.option("--email", required=True)
@click.option("--cents", required=True, type=int)
@click.option("--reason", required=True)
def reseller_credit(email: str, cents: int, reason: str) -> None:
    """Sell a reseller credit: add `cents` to its wallet."""
    echo_json(operator_call("operator_reseller_credit", operator_email=email, cents=cents, reason=reason))


@reseller.command("wallet")
@click.option("--email", required=True)
def reseller_wallet(email: str) -> None:
    """A reseller's balance, discount, customers and latest ledger entries."""
    echo_json(operator_call("operator_reseller_wallet", operator_email=email))
