"""The one writer of `resellers`, `reseller_customers` and `reseller_ledger` (issue 33.4), and the reads
the reseller scope needs. A reseller's balance row is the guard of its ledger: a credit adds, a charge is
one conditional UPDATE that cannot take it below zero, and each movement appends its ledger entry with
the balance after it, in the caller's transaction."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Select, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.core.clock import utcnow
from proxyplane.storage.models.operators import Operator
from proxyplane.storage.models.resellers import Reseller, ResellerCustomer, ResellerLedgerEntry


async def add_reseller(session: AsyncSession, operator_id: int, discount_percent: int) -> Reseller:
    row = Reseller(operator_id=operator_id, discount_percent=discount_percent, balance_cents=0)
    session.add(row)
    await session.flush()
    return row


async def get(session: AsyncSession, operator_id: int) -> Reseller | None:
    row: Reseller | None = await session.get(Reseller, operator_id)
    return row


async def set_discount(session: AsyncSession, operator_id: int, discount_percent: int) -> None:
    await session.execute(
        update(Reseller).where(Reseller.operator_id == operator_id).values(discount_percent=discount_percent)
    )


async def bind(session: AsyncSession, operator_id: int, customer_id: int) -> None:
    session.add(ResellerCustomer(operator_id=operator_id, customer_id=customer_id, created_at=utcnow()))
    await session.flush()


def customer_ids(operator_id: int) -> Select[Any]:
    """The ids of the customers bound to the reseller, as a subquery for `IN`."""
    return select(ResellerCustomer.customer_id).where(ResellerCustomer.operator_id == operator_id)


async def bound(session: AsyncSession, operator_id: int, customer_id: int) -> bool:
    found = await session.scalar(
        select(ResellerCustomer.operator_id).where(ResellerCustomer.customer_id == customer_id)
    )
    return found is not None and int(found) == operator_id


async def reseller_of(session: AsyncSession, customer_id: int) -> int | None:
    found = await session.scalar(
        select(ResellerCustomer.operator_id).where(ResellerCustomer.customer_id == customer_id)
    )
    return None if found is None else int(found)


async def add(session: AsyncSession, operator_id: int, cents: int) -> int:
    """Add `cents` (> 0) to the balance row; the new balance."""
    stmt = (
        update(Reseller)
        .where(Reseller.operator_id == operator_id)
        .values(balance_cents=Reseller.balance_cents + cents)
        .returning(Reseller.balance_cents)
    )
    return int((await session.execute(stmt)).scalar_one())


async def take(session: AsyncSession, operator_id: int, cents: int) -> int | None:
    """Take all of `cents` in one guarded UPDATE: the new balance, or None when there is not enough."""
    stmt = (
        update(Reseller)
        .where(Reseller.operator_id == operator_id, Reseller.balance_cents >= cents)
        .values(balance_cents=Reseller.balance_cents - cents)
        .returning(Reseller.balance_cents)
    )
    found = (await session.execute(stmt)).scalar_one_or_none()
    return None if found is None else int(found)


async def append(
    session: AsyncSession,
    operator_id: int,
    amount: int,
    balance_after: int,
    kind: str,
    description: str,
    *,
    customer_id: int | None = None,
    face_cents: int | None = None,
    reference: str | None = None,
    actor: str = "",
) -> ResellerLedgerEntry:
    entry = ResellerLedgerEntry(
        operator_id=operator_id,
        amount_cents=amount,
        balance_after_cents=balance_after,
        kind=kind,
        customer_id=customer_id,
        face_cents=face_cents,
        description=description[:500],
        reference=reference,
        actor=actor[:320],
        created_at=utcnow(),
    )
    session.add(entry)
    await session.flush()
    return entry


async def ledger(session: AsyncSession, operator_id: int, limit: int) -> list[ResellerLedgerEntry]:
    found = await session.execute(
        select(ResellerLedgerEntry)
        .where(ResellerLedgerEntry.operator_id == operator_id)
        .order_by(ResellerLedgerEntry.id.desc())
        .limit(limit)
    )
    return list(found.scalars())


async def ledger_sum(session: AsyncSession, operator_id: int) -> int:
    found = await session.scalar(
        select(func.coalesce(func.sum(ResellerLedgerEntry.amount_cents), 0)).where(
            ResellerLedgerEntry.operator_id == operator_id
        )
    )
    return int(found or 0)


async def listing(session: AsyncSession) -> list[tuple[Operator, Reseller, int]]:
    """Every reseller with its operator row and how many customers are bound to it."""
    counts = (
        select(ResellerCustomer.operator_id, func.count().label("n"))
        .group_by(ResellerCustomer.operator_id)
        .subquery()
    )
    found = await session.execute(
        select(Operator, Reseller, func.coalesce(counts.c.n, 0))
        .join(Reseller, Reseller.operator_id == Operator.id)
        .outerjoin(counts, counts.c.operator_id == Operator.id)
        .order_by(Operator.id)
    )
    return [(o, r, int(n)) for o, r, n in found.all()]


async def customer_count(session: AsyncSession, operator_id: int) -> int:
    found = await session.scalar(
        select(func.count()).select_from(ResellerCustomer).where(ResellerCustomer.operator_id == operator_id)
    )
    return int(found or 0)
