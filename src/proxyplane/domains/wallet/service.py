"""The wallet: every movement is a ledger entry; the guarded balance row makes debits safe under
concurrency (a conditional UPDATE that cannot take the balance below zero, in the caller's transaction)."""

from __future__ import annotations

import uuid

from sqlalchemy import func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.core.errors import InsufficientBalance, ValidationFailed
from proxyplane.domains.apikeys import caps
from proxyplane.domains.events.wallet import ledger_entry_added
from proxyplane.storage import paging
from proxyplane.storage.models import LedgerEntry, Wallet

# session.info key: cents debited in this transaction (invoke() checks an optional price guard before commit)
DEBITED_CENTS = "debited_cents"


async def balance(session: AsyncSession, customer_id: int) -> int:
    """The balance, derived from the append-only ledger."""
    total = await session.scalar(
        select(func.coalesce(func.sum(LedgerEntry.amount_cents), 0)).where(
            LedgerEntry.customer_id == customer_id
        )
    )
    return int(total or 0)


async def _ensure_wallet(session: AsyncSession, customer_id: int) -> None:
    if await session.get(Wallet, customer_id) is None:
        session.add(Wallet(customer_id=customer_id, balance_cents=0))
        await session.flush()


async def credit(
    session: AsyncSession,
    customer_id: int,
    cents: int,
    kind: str,
    description: str,
    *,
    service_id: uuid.UUID | None = None,
    invoice_id: str | None = None,
    deposit_id: uuid.UUID | None = None,
) -> LedgerEntry:
    if cents <= 0:
        raise ValidationFailed("a credit must be a positive number of cents", field="cents")
    await _ensure_wallet(session, customer_id)
    new_balance = (
        await session.execute(
            update(Wallet)
            .where(Wallet.customer_id == customer_id)
            .values(balance_cents=Wallet.balance_cents + cents)
            .returning(Wallet.balance_cents)
        )
    ).scalar_one()
    return await _append(
        session, customer_id, cents, new_balance, kind, description, service_id, invoice_id, deposit_id
    )


async def debit(
    session: AsyncSession,
    customer_id: int,
    cents: int,
    kind: str,
    description: str,
    *,
    service_id: uuid.UUID | None = None,
    invoice_id: str | None = None,
) -> LedgerEntry:
    """Take `cents` from the wallet or raise InsufficientBalance (402) leaving everything unchanged."""
    if cents <= 0:
        raise ValidationFailed("a debit must be a positive number of cents", field="cents")
    await caps.charge(session, cents)  # the calling API key's spending cap, if it has one
    await _ensure_wallet(session, customer_id)
    new_balance = (
        await session.execute(
            update(Wallet)
            .where(Wallet.customer_id == customer_id, Wallet.balance_cents >= cents)
            .values(balance_cents=Wallet.balance_cents - cents)
            .returning(Wallet.balance_cents)
        )
    ).scalar_one_or_none()
    if new_balance is None:
        have = await balance(session, customer_id)
        raise InsufficientBalance(
            f"insufficient balance: {cents} cents needed, {have} available",
            required_cents=cents,
            balance_cents=have,
        )
    session.info[DEBITED_CENTS] = session.info.get(DEBITED_CENTS, 0) + cents
    return await _append(
        session, customer_id, -cents, new_balance, kind, description, service_id, invoice_id, None
    )


async def _append(
    session: AsyncSession,
    customer_id: int,
    amount: int,
    balance_after: int,
    kind: str,
    description: str,
    service_id: uuid.UUID | None,
    invoice_id: str | None,
    deposit_id: uuid.UUID | None,
) -> LedgerEntry:
    entry = LedgerEntry(
        customer_id=customer_id,
        amount_cents=amount,
        balance_after_cents=balance_after,
        kind=kind,
        description=description[:500],
        service_id=service_id,
        invoice_id=invoice_id,
        deposit_id=deposit_id,
    )
    session.add(entry)
    await session.flush()
    await ledger_entry_added(session, entry)
    return entry


async def ledger(
    session: AsyncSession, customer_id: int, offset: int, limit: int
) -> tuple[list[LedgerEntry], int]:
    return await paging.page(
        session, LedgerEntry, LedgerEntry.id, [LedgerEntry.customer_id == customer_id], offset, limit
    )
