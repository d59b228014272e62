"""The operator's account actions (`proxyplane admin customer|key|wallet|kyc|partner-discount`) as
registered operations served by the "cli" door only: never REST or MCP. The operator's authority is
access to the host and its database, so they take no API key (Auth.NONE); each runs through `invoke`
(one unit of work, one commit, the same money guard: a debit is declared SPENDS_MONEY)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from proxyplane.domains.accounts import service as accounts
from proxyplane.domains.apikeys import service as apikeys
from proxyplane.domains.operators import resellers
from proxyplane.domains.wallet import service as wallet
from proxyplane.ops import OPERATOR, OPERATOR_DOORS, Context, Effect, operator_op, register
from proxyplane.storage.models import Customer


def customer_json(c: Customer) -> dict[str, Any]:
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


class ByEmail(BaseModel):
    email: str


class NewCustomer(ByEmail):
    password: str
    name: str = ""


class NewKey(ByEmail):
    name: str
    scopes: list[str]


class Move(ByEmail):
    cents: int
    reason: str


class Discount(ByEmail):
    percent: int


async def create_customer(ctx: Context, data: NewCustomer) -> dict[str, Any]:
    """A new customer; made by a reseller, it is bound to that reseller (issue 33.4)."""
    c = await accounts.create_customer(ctx.session, data.email, data.password, data.name)
    reseller_id = resellers.scope_of(ctx.caller)
    if reseller_id is not None:
        await resellers.adopt(ctx.session, reseller_id, c.id)
    return customer_json(c)


async def show_customer(ctx: Context, data: ByEmail) -> dict[str, Any]:
    c = await accounts.require_by_email(ctx.session, data.email)
    return {**customer_json(c), "balance_cents": await wallet.balance(ctx.session, c.id)}


async def create_key(ctx: Context, data: NewKey) -> dict[str, Any]:
    c = await accounts.require_by_email(ctx.session, data.email)
    k, raw = await apikeys.create_key(ctx.session, c.id, data.name, frozenset(data.scopes))
    return {"key_id": str(k.id), "name": k.name, "scopes": k.scopes, "secret": raw, "email": c.email}


async def credit(ctx: Context, data: Move) -> dict[str, Any]:
    c = await accounts.require_by_email(ctx.session, data.email)
    ctx.audit.update(
        target=f"customer:{c.id}", before={"balance_cents": await wallet.balance(ctx.session, c.id)}
    )
    reseller_id = resellers.scope_of(ctx.caller)
    if reseller_id is None:
        await wallet.credit(ctx.session, c.id, data.cents, "adjustment", f"Operator credit: {data.reason}")
        return {"email": c.email, "balance_cents": await wallet.balance(ctx.session, c.id)}
    # a reseller's credit: paid first from its own wallet at its price (402 and nothing credited otherwise)
    paid = await resellers.charge_for_credit(
        ctx.session,
        reseller_id,
        c.id,
        data.cents,
        reason=data.reason,
        reference=ctx.door_key,
        actor=ctx.caller.actor,
    )
    await wallet.credit(ctx.session, c.id, data.cents, "adjustment", f"Reseller credit: {data.reason}")
    return {"email": c.email, "balance_cents": await wallet.balance(ctx.session, c.id), **paid}


async def debit(ctx: Context, data: Move) -> dict[str, Any]:
    c = await accounts.require_by_email(ctx.session, data.email)
    ctx.audit.update(
        target=f"customer:{c.id}", before={"balance_cents": await wallet.balance(ctx.session, c.id)}
    )
    await wallet.debit(ctx.session, c.id, data.cents, "adjustment", f"Operator debit: {data.reason}")
    return {"email": c.email, "balance_cents": await wallet.balance(ctx.session, c.id)}


async def approve_kyc(ctx: Context, data: ByEmail) -> dict[str, Any]:
    c = await accounts.require_by_email(ctx.session, data.email)
    await accounts.set_kyc_verified(ctx.session, c)
    return customer_json(c)


async def set_partner_discount(ctx: Context, data: Discount) -> dict[str, Any]:
    c = await accounts.require_by_email(ctx.session, data.email)
    await accounts.set_partner_discount(ctx.session, c, data.percent)
    return customer_json(c)


_op = operator_op


OWN = "reseller.customers"  # a reseller: its own customers only (domains/operators/resellers.py)
CREATE_CUSTOMER = _op(
    "create_customer",
    create_customer,
    NewCustomer,
    permission="customers.write",
    doors=OPERATOR_DOORS,
    reseller=OWN,
)
SHOW_CUSTOMER = _op(
    "show_customer",
    show_customer,
    ByEmail,
    Effect.READ,
    permission="customers.read",
    reseller=OWN,
    bound_by="email",
)
# the new key's secret is printed on the host only: never through the operator API or the console
CREATE_KEY = _op("create_key", create_key, NewKey, permission="customers.keys", doors=OPERATOR)
CREDIT = _op(
    "wallet_credit",
    credit,
    Move,
    permission="wallet.credit",
    doors=OPERATOR_DOORS,
    reseller="reseller.credit",
    bound_by="email",
)
DEBIT = _op("wallet_debit", debit, Move, Effect.SPENDS_MONEY, permission="wallet.debit", doors=OPERATOR_DOORS)
APPROVE_KYC = _op("approve_kyc", approve_kyc, ByEmail, permission="customers.write")
PARTNER_DISCOUNT = _op("set_partner_discount", set_partner_discount, Discount, permission="customers.write")
register(CREATE_CUSTOMER, SHOW_CUSTOMER, CREATE_KEY, CREDIT, DEBIT, APPROVE_KYC, PARTNER_DISCOUNT)
