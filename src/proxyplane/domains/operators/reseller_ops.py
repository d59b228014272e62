"""The reseller operations (issue 33.4), in the one registry: staff create resellers (an operator of the
role "reseller" with its discount), list them, set the discount, credit or debit their wallets; a
reseller and staff read a reseller's wallet and ledger (a reseller only its own). Each write is audited
by invoke like every operator operation; its door's once-only key is the ledger entry's reference."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from proxyplane.core.errors import NotFound
from proxyplane.domains.operators import resellers
from proxyplane.domains.operators import service as operators
from proxyplane.domains.operators.roles import RESELLER
from proxyplane.ops import OPERATOR_DOORS, Context, Effect, operator_op, register
from proxyplane.storage.repos import resellers as repo

API = OPERATOR_DOORS - {"console"}
MANAGE = "resellers.manage"


class NewReseller(BaseModel):
    operator_email: str = Field(max_length=320)
    discount_percent: int = Field(ge=0, le=resellers.MAX_DISCOUNT)


class DiscountChange(NewReseller):
    pass


class ResellerMove(BaseModel):
    operator_email: str = Field(max_length=320)
    cents: int = Field(gt=0, le=100_000_000)
    reason: str = Field(min_length=1, max_length=300)


class WalletRef(BaseModel):
    operator_email: str = Field(default="", max_length=320, description="a reseller's; empty: one's own")
    limit: int = Field(default=50, ge=1, le=500)


class NoInput(BaseModel):
    pass


async def _reseller(ctx: Context, email: str) -> Any:
    target = await operators.by_email(ctx.session, email) if email else None
    if target is None or target.role != RESELLER:
        raise NotFound(f"no reseller with the email {email!r}")
    return target


async def create(ctx: Context, data: NewReseller) -> dict[str, Any]:
    row, password = await operators.create(ctx.session, data.operator_email, RESELLER, reseller=True)
    await repo.add_reseller(ctx.session, row.id, data.discount_percent)
    out = {"operator_email": row.email, "role": row.role, "discount_percent": data.discount_percent}
    ctx.audit["after"] = out  # the one-time password stays out of the audit log
    base = ctx.platform.settings.public_base_url.rstrip("/")
    return {**out, "one_time_password": password, "sign_in_url": f"{base}/admin/login"}


async def listing(ctx: Context, data: NoInput) -> dict[str, Any]:
    rows = await repo.listing(ctx.session)
    return {
        "resellers": [
            {
                "operator_email": o.email,
                "status": o.status,
                "discount_percent": r.discount_percent,
                "balance_cents": int(r.balance_cents),
                "customers": n,
            }
            for o, r, n in rows
        ]
    }


async def set_discount(ctx: Context, data: DiscountChange) -> dict[str, Any]:
    target = await _reseller(ctx, data.operator_email)
    row = await resellers.require(ctx.session, target.id)
    ctx.audit["before"] = {"discount_percent": row.discount_percent}
    await repo.set_discount(ctx.session, target.id, data.discount_percent)
    return {"operator_email": target.email, "discount_percent": data.discount_percent}


async def credit(ctx: Context, data: ResellerMove) -> dict[str, Any]:
    target = await _reseller(ctx, data.operator_email)
    ctx.audit["before"] = {
        "balance_cents": int((await resellers.require(ctx.session, target.id)).balance_cents)
    }
    after = await resellers.deposit(
        ctx.session, target.id, data.cents, data.reason, reference=ctx.door_key, actor=ctx.caller.actor
    )
    return {"operator_email": target.email, "balance_cents": after}


async def debit(ctx: Context, data: ResellerMove) -> dict[str, Any]:
    target = await _reseller(ctx, data.operator_email)
    ctx.audit["before"] = {
        "balance_cents": int((await resellers.require(ctx.session, target.id)).balance_cents)
    }
    after = await resellers.take_back(
        ctx.session, target.id, data.cents, data.reason, reference=ctx.door_key, actor=ctx.caller.actor
    )
    return {"operator_email": target.email, "balance_cents": after}


async def wallet(ctx: Context, data: WalletRef) -> dict[str, Any]:
    """A reseller's balance, discount, number of customers and latest ledger entries. A reseller sees
    its own only (another's email: 404, as for none)."""
    own = resellers.scope_of(ctx.caller)
    if own is not None:
        if data.operator_email and data.operator_email.strip().lower() != ctx.caller.actor.lower():
            raise NotFound(f"no reseller with the email {data.operator_email!r}")
        return await resellers.wallet(ctx.session, own, ctx.caller.actor, data.limit)
    target = await _reseller(ctx, data.operator_email)
    return await resellers.wallet(ctx.session, target.id, target.email, data.limit)


R = Effect.READ
CREATE = operator_op("reseller_create", create, NewReseller, permission=MANAGE, doors=API)
LIST = operator_op("reseller_list", listing, NoInput, R, permission="resellers.read", doors=OPERATOR_DOORS)
DISCOUNT = operator_op("reseller_set_discount", set_discount, DiscountChange, permission=MANAGE, doors=API)
CREDIT = operator_op("reseller_credit", credit, ResellerMove, permission=MANAGE, doors=OPERATOR_DOORS)
DEBIT = operator_op("reseller_debit", debit, ResellerMove, permission=MANAGE, doors=API)
WALLET = operator_op(
    "reseller_wallet",
    wallet,
    WalletRef,
    R,
    permission="resellers.read",
    doors=OPERATOR_DOORS,
    reseller="reseller.wallet",
)
register(CREATE, LIST, DISCOUNT, CREDIT, DEBIT, WALLET)
