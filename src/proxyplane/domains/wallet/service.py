"""The wallet: every movement is a ledger entry; the guarded balance row makes debits safe under
concurrency (a conditional UPDATE that cannot take the balance below zero, in the caller's transaction)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.core.errors import InsufficientBalance, ValidationFailed
from proxyplane.domains.apikeys import caps
from proxyplane.domains.events.service import after_debit
from proxyplane.domains.events.wallet import ledger_entry_added
from proxyplane.domains.wallet.ledger import ledger_page
from proxyplane.storage.models import LedgerEntry
from proxyplane.storage.repos import wallet as repo


async def balance(session: AsyncSession, customer_id: int) -> int:
    """The balance, derived from the append-only ledger: the newest entry's running balance
    (`balance_after_cents`), O(1) in the ledger's size. Each entry's running balance is the guarded wallet
    row's value after its own movement, written in the same transaction (`credit`/`debit`/
    `record_withdrawal`), and a customer's entries are serialized by that row's lock, so the newest one
    equals the sum of all amounts (tests/domains/wallet/test_balance.py checks it; bench/platform.py
    checks the ledger sums to every balance). No entry yet: 0."""
    return await repo.newest_balance(session, customer_id)


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
    await repo.ensure_wallet(session, customer_id)
    new_balance = await repo.add(session, customer_id, cents)
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
    await repo.ensure_wallet(session, customer_id)
    new_balance = await repo.take(session, customer_id, cents)
    if new_balance is None:
        raise await _insufficient(session, customer_id, cents)
    return await _append(  # the repository counts the debit for invoke()'s money guard
        session, customer_id, -cents, new_balance, kind, description, service_id, invoice_id, None
    )


@dataclass(frozen=True)
class Withdrawal:
    """Cents taken from the balance row by `withdraw`, not yet in the ledger (see `record_withdrawal`)."""

    cents: int
    balance_after_cents: int


async def withdraw(session: AsyncSession, customer_id: int, cents: int, *, up_to: bool = False) -> Withdrawal:
    """The balance half of a debit, for a purchase path that writes its ledger entry later in the same
    transaction (`record_withdrawal`, which must follow). Takes all of `cents` in one guarded UPDATE, or
    raises InsufficientBalance; with `up_to`, takes as much as there is (possibly 0) instead."""
    taken = cents
    new_balance = await repo.take(session, customer_id, cents)
    if new_balance is None and up_to:
        have = await repo.locked_balance(session, customer_id)
        taken = min(have, cents)
        new_balance = have if taken <= 0 else await repo.take(session, customer_id, taken)
    if new_balance is None:
        raise await _insufficient(session, customer_id, cents)
    return Withdrawal(max(taken, 0), int(new_balance))


async def _insufficient(session: AsyncSession, customer_id: int, cents: int) -> InsufficientBalance:
    have = await balance(session, customer_id)
    return InsufficientBalance(
        f"insufficient balance: {cents} cents needed, {have} available",
        required_cents=cents,
        balance_cents=have,
    )


async def record_withdrawal(
    session: AsyncSession,
    customer_id: int,
    taken: Withdrawal,
    kind: str,
    description: str,
    *,
    service_id: uuid.UUID | None = None,
    invoice_id: str | None = None,
    capped_key: bool = True,
    balance_low_threshold: tuple[int | None] | None = None,
) -> None:
    """The ledger half of `withdraw`: the API key's spending cap (skipped when the caller knows the key
    has none), the price guard's count, one Core INSERT of the entry and the balance-low event (with the
    threshold the caller already read, if given)."""
    if taken.cents <= 0:
        return
    if capped_key:
        await caps.charge(session, taken.cents)
    await repo.add_debit_entry(  # counted there for the price guard
        session,
        customer_id,
        taken.cents,
        taken.balance_after_cents,
        kind,
        description,
        service_id,
        invoice_id,
    )
    await after_debit(
        session,
        customer_id,
        taken.balance_after_cents + taken.cents,
        taken.balance_after_cents,
        known_threshold=balance_low_threshold,
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
    entry = await repo.add_entry(
        session, customer_id, amount, balance_after, kind, description, service_id, invoice_id, deposit_id
    )
    await ledger_entry_added(session, entry)
    return entry


async def ledger(
    session: AsyncSession, customer_id: int, offset: int, limit: int
) -> tuple[list[LedgerEntry], int]:
    return await ledger_page(session, customer_id, offset, limit)  # by seq: any offset in two lookups
