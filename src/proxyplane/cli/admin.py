"""`proxyplane admin customer|key|wallet|kyc|partner-discount`: flags in, JSON out, over the registered
operator operations (domains/accounts/operator_ops.py, served by the "cli" door only)."""

from __future__ import annotations

import click

from proxyplane.cli.common import LazyGroup, echo_json, fail, operator_call
from proxyplane.core.scopes import parse_scopes

# groups of their own modules, imported when used: importing one adds its groups to `admin`
STOCK, TICKETS = "proxyplane.cli.admin_stock", "proxyplane.cli.admin_tickets"
OPERATORS = "proxyplane.cli.admin_operators"  # issue 33: operator accounts and their keys
MAIL = "proxyplane.cli.admin_mail"  # issue 34: the email outbox
UPSTREAMS = "proxyplane.cli.admin_upstreams"  # issue 36: upstream proxy suppliers


@click.group(
    cls=LazyGroup,
    lazy={
        "stock": STOCK,
        "product": STOCK,
        "price": STOCK,
        "ticket": TICKETS,
        "operator": OPERATORS,
        "reseller": OPERATORS,  # issue 33.4
        "outbox": MAIL,
        "upstream": UPSTREAMS,
    },
)
def admin() -> None:
    """Operator commands: customers, keys, wallets, KYC, partner discounts."""


@admin.group()
def customer() -> None:
    """Customer accounts."""


@customer.command("create")
@click.option("--email", required=True)
@click.option("--password", required=True)
@click.option("--name", default="")
def customer_create(email: str, password: str, name: str) -> None:
    """Create a customer account and print it as JSON."""
    echo_json(operator_call("operator_create_customer", email=email, password=password, name=name))


@customer.command("show")
@click.option("--email", required=True)
def customer_show(email: str) -> None:
    """Print one customer with the wallet balance."""
    echo_json(operator_call("operator_show_customer", email=email))


@admin.group()
def key() -> None:
    """API keys."""


@key.command("create")
@click.option("--email", required=True)
@click.option("--name", required=True)
@click.option("--scopes", required=True, help="comma-separated scopes, or `all`")
def key_create(email: str, name: str, scopes: str) -> None:
    """Create an API key; prints it as JSON with its secret (shown only this once)."""
    try:
        wanted = parse_scopes(scopes)
    except ValueError as exc:
        fail(str(exc))
    echo_json(operator_call("operator_create_key", email=email, name=name, scopes=sorted(wanted)))


@admin.group("wallet")
def wallet_group() -> None:
    """Credit or debit a customer's wallet (a ledger entry with a reason)."""


def _move(email: str, cents: int, reason: str, sign: int) -> None:
    if cents <= 0:
        fail("--cents must be a positive whole number of cents")
    if not reason.strip():
        fail("--reason must not be empty")
    name = "operator_wallet_credit" if sign > 0 else "operator_wallet_debit"
    echo_json(operator_call(name, email=email, cents=cents, reason=reason))


@wallet_group.command("credit")
@click.option("--email", required=True)
@click.option("--cents", required=True, type=int)
@click.option("--reason", required=True)
def wallet_credit(email: str, cents: int, reason: str) -> None:
    """Add cents to the wallet; prints the new balance."""
    _move(email, cents, reason, +1)


@wallet_group.command("debit")
@click.option("--email", required=True)
@click.option("--cents", required=True, type=int)
@click.option("--reason", required=True)
def wallet_debit(email: str, cents: int, reason: str) -> None:
    """Take cents from the wallet (never below zero); prints the new balance."""
    _move(email, cents, reason, -1)


@admin.group()
def kyc() -> None:
    """Identity verification."""


@kyc.command("approve")
@click.option("--email", required=True)
def kyc_approve(email: str) -> None:
    """Mark the customer's identity verification (KYC) as done."""
    echo_json(operator_call("operator_approve_kyc", email=email))


@admin.group("partner-discount")
def partner_discount() -> None:
    """Partner (reseller) discounts."""


@partner_discount.command("set")
@click.option("--email", required=True)
@click.option("--percent", required=True, type=int)
def partner_discount_set(email: str, percent: int) -> None:
    """Set the partner discount percent (0 removes it)."""
    echo_json(operator_call("operator_set_partner_discount", email=email, percent=percent))
