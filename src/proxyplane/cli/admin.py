"""`proxyplane admin ...` sub-commands."""

from __future__ import annotations

from typing import Any

import click

from proxyplane.cli.common import admin_call, echo_json, fail
from proxyplane.core.scopes import parse_scopes
from proxyplane.domains.accounts import service as accounts
from proxyplane.domains.apikeys import service as apikeys
from proxyplane.domains.wallet import service as wallet


@click.group()
def admin() -> None:
    """Operator commands: customers, keys, wallets, KYC, partner discounts."""


def customer_json(c: Any) -> dict[str, Any]:
    return {
        "customer_id": c.id,
        "email": c.email,
        "name": c.name,
        "phone": c.phone,
        "status": c.status,
        "kyc_verified": c.kyc_verified_at is not None,
        "partner_discount_percent": c.partner_discount_percent,
        "created_at": c.created_at.isoformat(),
    }


@admin.group()
def customer() -> None:
    """Customer accounts."""


@customer.command("create")
@click.option("--email", required=True)
@click.option("--password", required=True)
@click.option("--name", default="")
def customer_create(email: str, password: str, name: str) -> None:
    """Create a customer account and print it as JSON."""

    async def go(session: Any, _: Any) -> Any:
        return customer_json(await accounts.create_customer(session, email, password, name))

    echo_json(admin_call(go))


@customer.command("show")
@click.option("--email", required=True)
def customer_show(email: str) -> None:
    """Print one customer with the wallet balance."""

    async def go(session: Any, _: Any) -> Any:
        c = await accounts.require_by_email(session, email)
        return {**customer_json(c), "balance_cents": await wallet.balance(session, c.id)}

    echo_json(admin_call(go))


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

    async def go(session: Any, _: Any) -> Any:
        c = await accounts.require_by_email(session, email)
        k, raw = await apikeys.create_key(session, c.id, name, wanted)
        return {"key_id": str(k.id), "name": k.name, "scopes": k.scopes, "secret": raw, "email": c.email}

    echo_json(admin_call(go))


@admin.group("wallet")
def wallet_group() -> None:
    """Credit or debit a customer's wallet (a ledger entry with a reason)."""


def _move(email: str, cents: int, reason: str, sign: int) -> None:
    if cents <= 0:
        fail("--cents must be a positive whole number of cents")
    if not reason.strip():
        fail("--reason must not be empty")

    async def go(session: Any, _: Any) -> Any:
        c = await accounts.require_by_email(session, email)
        if sign > 0:
            await wallet.credit(session, c.id, cents, "adjustment", f"Operator credit: {reason}")
        else:
            await wallet.debit(session, c.id, cents, "adjustment", f"Operator debit: {reason}")
        return {"email": c.email, "balance_cents": await wallet.balance(session, c.id)}

    echo_json(admin_call(go))


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

    async def go(session: Any, _: Any) -> Any:
        c = await accounts.require_by_email(session, email)
        await accounts.set_kyc_verified(session, c)
        return customer_json(c)

    echo_json(admin_call(go))


@admin.group("partner-discount")
def partner_discount() -> None:
    """Partner (reseller) discounts."""


@partner_discount.command("set")
@click.option("--email", required=True)
@click.option("--percent", required=True, type=int)
def partner_discount_set(email: str, percent: int) -> None:
    """Set the partner discount percent (0 removes it)."""

    async def go(session: Any, _: Any) -> Any:
        c = await accounts.require_by_email(session, email)
        await accounts.set_partner_discount(session, c, percent)
        return customer_json(c)

    echo_json(admin_call(go))
