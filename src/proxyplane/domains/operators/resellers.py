"""Resellers (issue 33.4): an operator of the role "reseller" acts on the customers bound to it (the ones
it created) and on nobody else, and pays for the wallet credit it gives them from its own prepaid
wallet, at its reseller price (docs/decisions/operators.md, "Resellers").

Scope: an operation a reseller may run declares its reseller permission and the input field naming the
one customer it acts on (`Operation.bound_by`); `check_bound` runs in the operation's unit of work before
the handler and answers a customer not bound to the reseller exactly as one that does not exist (404,
the operation's own wording), so existence is never revealed. An operation without such a field (a
list, a creation, the reseller's own wallet) filters by `scope_of` itself.

Money: the reseller's balance row guards its append-only ledger; a charge is one conditional UPDATE
(never negative: 402 insufficient_balance otherwise), in the same transaction as the customer's credit.
Nothing here commits."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.core.errors import InsufficientBalance, NotFound, Unauthorized, ValidationFailed
from proxyplane.domains.accounts import service as accounts
from proxyplane.domains.operators.roles import RESELLER
from proxyplane.domains.services import service as services
from proxyplane.ops import Caller, Operation
from proxyplane.storage.models import Ticket
from proxyplane.storage.repos import resellers as repo

BOUND_BY = ("customer_id", "email", "service_id", "ticket_id")
MAX_DISCOUNT = 90


def scope_of(caller: Caller) -> int | None:
    """The reseller (its operator id) whose customers bound this call, None for staff."""
    if caller.role != RESELLER:
        return None
    if caller.operator_id is None:  # never the host's CLI: a reseller acts as itself
        raise Unauthorized("a reseller acts as itself: sign in or use its own operator API key")
    return caller.operator_id


def _missing(field: str, value: Any) -> str:
    """The operation's own 404 wording for `value` (the same whether it exists elsewhere or not at all)."""
    if field == "email":
        return f"no customer with email {str(value or '').strip().lower()}"
    if field == "ticket_id":
        return f"ticket {value} not found"
    return f"no {field.removesuffix('_id')} {value}"


async def _customer_of(session: AsyncSession, field: str, value: Any) -> int | None:
    if value in (None, ""):
        return None
    if field == "customer_id":
        return int(value)
    if field == "email":
        found = await accounts.find_by_email(session, str(value))
        return found.id if found is not None else None
    if field == "service_id":
        svc = await services.get_by_service_id(session, value)
        return svc.customer_id if svc is not None else None
    if field == "ticket_id":
        ticket: Ticket | None = await session.get(Ticket, value)
        return ticket.customer_id if ticket is not None else None
    raise ValueError(f"unknown bound_by field {field!r}")


async def check_bound(session: AsyncSession, op: Operation, caller: Caller, data: BaseModel | None) -> None:
    """For a reseller's call: the customer `op` acts on must be bound to it, else 404 (as for none)."""
    reseller_id = scope_of(caller)
    if reseller_id is None or not op.bound_by:
        return
    value = getattr(data, op.bound_by, None) if data is not None else None
    customer_id = await _customer_of(session, op.bound_by, value)
    if customer_id is None or not await repo.bound(session, reseller_id, customer_id):
        raise NotFound(_missing(op.bound_by, value))


async def require_own(session: AsyncSession, caller: Caller, customer_id: int, missing: str) -> None:
    """For a reseller: 404 (`missing`, the wording for none) unless `customer_id` is bound to it."""
    reseller_id = scope_of(caller)
    if reseller_id is not None and not await repo.bound(session, reseller_id, customer_id):
        raise NotFound(missing)


async def adopt(session: AsyncSession, reseller_id: int, customer_id: int) -> None:
    """Bind a customer the reseller just created to it."""
    await repo.bind(session, reseller_id, customer_id)


def check_discount(percent: int) -> None:
    if not 0 <= percent <= MAX_DISCOUNT:
        raise ValidationFailed(f"discount_percent must be 0 to {MAX_DISCOUNT}", field="discount_percent")


def price(face_cents: int, discount_percent: int) -> int:
    """What the reseller pays for `face_cents` of its customer's wallet credit: (100 - discount)% of face
    value, rounded up to the cent (the discount is rounded down: never a cent in the reseller's favour)."""
    return face_cents - face_cents * discount_percent // 100


async def require(session: AsyncSession, reseller_id: int) -> Any:
    row = await repo.get(session, reseller_id)
    if row is None:
        raise NotFound("no such reseller")
    return row


async def deposit(
    session: AsyncSession, reseller_id: int, cents: int, reason: str, *, reference: str | None, actor: str
) -> int:
    """The provider sells the reseller `cents` of credit; the new balance."""
    if cents <= 0:
        raise ValidationFailed("a credit must be a positive number of cents", field="cents")
    await require(session, reseller_id)
    after = await repo.add(session, reseller_id, cents)
    await repo.append(session, reseller_id, cents, after, "deposit", reason, reference=reference, actor=actor)
    return after


async def take_back(
    session: AsyncSession, reseller_id: int, cents: int, reason: str, *, reference: str | None, actor: str
) -> int:
    """The provider takes `cents` of credit back (402 beyond the balance); the new balance."""
    if cents <= 0:
        raise ValidationFailed("a debit must be a positive number of cents", field="cents")
    await require(session, reseller_id)
    after = await _take(session, reseller_id, cents)
    kind = "adjustment"
    await repo.append(session, reseller_id, -cents, after, kind, reason, reference=reference, actor=actor)
    return after


async def _take(session: AsyncSession, reseller_id: int, cents: int, face_cents: int | None = None) -> int:
    after = await repo.take(session, reseller_id, cents)
    if after is None:
        have = (await require(session, reseller_id)).balance_cents
        extra = {"face_cents": face_cents} if face_cents is not None else {}
        raise InsufficientBalance(
            f"insufficient reseller balance: {cents} cents needed, {have} available; nothing was credited",
            required_cents=cents,
            balance_cents=int(have),
            **extra,
        )
    return after


async def charge_for_credit(
    session: AsyncSession,
    reseller_id: int,
    customer_id: int,
    face_cents: int,
    *,
    reason: str,
    reference: str | None,
    actor: str,
) -> dict[str, int]:
    """Charge the reseller its price for crediting `face_cents` to its customer (402, nothing charged,
    when its wallet cannot pay). Returns what it paid and its balance after."""
    if reference is None:
        raise ValidationFailed(
            "a reseller's credit is paid from its wallet: send an Idempotency-Key (the console's form "
            "and an MCP idempotency_key do) so that a retry never pays twice",
            field="idempotency_key",
        )
    row = await require(session, reseller_id)
    cost = price(face_cents, int(row.discount_percent))
    after = await _take(session, reseller_id, cost, face_cents) if cost > 0 else int(row.balance_cents)
    await repo.append(
        session,
        reseller_id,
        -cost,
        after,
        "customer_credit",
        reason,
        customer_id=customer_id,
        face_cents=face_cents,
        reference=reference,
        actor=actor,
    )
    return {"reseller_charged_cents": cost, "reseller_balance_cents": after}


def entry_json(e: Any) -> dict[str, Any]:
    return {
        "entry_id": e.id,
        "kind": e.kind,
        "amount_cents": e.amount_cents,
        "balance_after_cents": e.balance_after_cents,
        "customer_id": e.customer_id,
        "face_cents": e.face_cents,
        "description": e.description,
        "actor": e.actor,
        "created_at": e.created_at.isoformat(),
    }


async def wallet(session: AsyncSession, reseller_id: int, email: str, limit: int) -> dict[str, Any]:
    row = await require(session, reseller_id)
    return {
        "operator_email": email,
        "discount_percent": row.discount_percent,
        "balance_cents": int(row.balance_cents),
        "customers": await repo.customer_count(session, reseller_id),
        "ledger": [entry_json(e) for e in await repo.ledger(session, reseller_id, limit)],
    }
