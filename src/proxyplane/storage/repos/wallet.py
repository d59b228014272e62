"""The one writer of `wallets` and `ledger_entries` (issue 31): every debit, credit and ledger entry, in
the caller's transaction, and the price guard's count of what was debited (`call_context(...)
.debited_cents`, read by ops.check_guards before commit), kept here and nowhere else.

The count follows the ledger: a debit entry written adds its cents (`_counted`), and a savepoint rolled
back (storage/repos/savepoints.py) takes back what was counted since it was opened. The lean PostgreSQL
order statements (storage/repos/orders.py) take their wallet parts from the fragments below
(`DEBIT_CTE`, `debit_entry_cte`), so the guarded debit and the ledger row have one author.
"""

from __future__ import annotations

import uuid
from typing import cast

from sqlalchemy import Table, bindparam, insert, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.core.call import call_context
from proxyplane.core.clock import utcnow
from proxyplane.storage.driver import DriverStatement
from proxyplane.storage.engine_choice import is_postgres
from proxyplane.storage.models import LedgerEntry, Wallet

_LEDGER = cast(Table, LedgerEntry.__table__)
_WALLETS = cast(Table, Wallet.__table__)

# the newest ledger entry of a customer, on the (customer_id, id) index: one probe whatever the ledger size
_NEWEST_BALANCE = DriverStatement(
    select(_LEDGER.c.balance_after_cents)
    .where(_LEDGER.c.customer_id == bindparam("cid"))
    .order_by(_LEDGER.c.id.desc())
    .limit(1)
)
# the guarded debit, a Core statement built once (every purchase runs it: nothing to construct, key or
# synchronize per call; no code reads a loaded Wallet object's balance, only `ensure_wallet` loads one)
_TAKE = DriverStatement(  # run on the driver connection (storage/driver.py)
    update(_WALLETS)
    .where(_WALLETS.c.customer_id == bindparam("cid"), _WALLETS.c.balance_cents >= bindparam("cents"))
    .values(balance_cents=_WALLETS.c.balance_cents - bindparam("cents"))
    .returning(_WALLETS.c.balance_cents)
)
# a purchase's ledger entry: one Core INSERT (no ORM unit of work; `seq` is set by the database trigger)
_ADD_ENTRY = DriverStatement(insert(_LEDGER))

# fragments of the lean PostgreSQL order statements (storage/repos/orders.py). The guarded debit of
# `_TAKE` as a CTE named `w` (parameters :customer_id, :total), its new balance `w.balance_cents`:
DEBIT_CTE = (
    "w AS (UPDATE wallets SET balance_cents = balance_cents - CAST(:total AS BIGINT)"
    " WHERE customer_id = CAST(:customer_id AS INTEGER) AND balance_cents >= CAST(:total AS BIGINT)"
    " RETURNING balance_cents)"
)


def debit_entry_cte(amount: str, balance: str, description: str, invoice_id: str, sources: str) -> str:
    """A purchase's ledger entry (what `add_debit_entry` inserts) as a CTE named `entry`: SQL expressions
    for the amount (negative), the balance after, the description, the invoice id, and its FROM list."""
    return (
        "entry AS (INSERT INTO ledger_entries (customer_id, amount_cents, balance_after_cents, kind,"
        " description, service_id, invoice_id, deposit_id, created_at)"
        f" SELECT CAST(:customer_id AS INTEGER), {amount}, {balance}, 'purchase', {description},"
        f" CAST(:service_id AS UUID), {invoice_id}, NULL, CAST(:e_now AS TIMESTAMPTZ) FROM {sources})"
    )


def _counted(session: AsyncSession, cents: int) -> None:
    """The price guard's count: `cents` debited in this transaction (see the module docstring)."""
    call_context(session).debited_cents += cents


def counted_statement(session: AsyncSession, cents: int) -> None:
    """For storage/repos/orders.py only: a lean statement built with `debit_entry_cte` wrote a debit
    entry of `cents`."""
    _counted(session, cents)


async def newest_balance(session: AsyncSession, customer_id: int) -> int:
    """The newest entry's running balance (0 without entries)."""
    return int(await _NEWEST_BALANCE.scalar(session, {"cid": customer_id}) or 0)


async def ensure_wallet(session: AsyncSession, customer_id: int) -> None:
    """The customer's balance row, created at 0 when missing."""
    if await session.get(Wallet, customer_id) is None:
        add_wallet(session, customer_id)
        await session.flush()


def add_wallet(session: AsyncSession, customer_id: int) -> None:
    """A new customer's balance row at 0 (flushed with the customer's row)."""
    session.add(Wallet(customer_id=customer_id, balance_cents=0))


async def add(session: AsyncSession, customer_id: int, cents: int) -> int:
    """Add `cents` (> 0) to the balance row; the new balance."""
    stmt = (
        update(Wallet)
        .where(Wallet.customer_id == customer_id)
        .values(balance_cents=Wallet.balance_cents + cents)
        .returning(Wallet.balance_cents)
    )
    return int((await session.execute(stmt)).scalar_one())


async def take(session: AsyncSession, customer_id: int, cents: int) -> int | None:
    """Take all of ``cents`` in one guarded UPDATE: the new balance, or None when there is not enough."""
    taken = await _TAKE.scalar(session, {"cid": customer_id, "cents": cents})
    return None if taken is None else int(taken)


async def locked_balance(session: AsyncSession, customer_id: int) -> int:
    """The balance row's value, locked for the rest of the transaction where the engine has row locks
    (SQLite's writer holds the whole database already)."""
    q = select(Wallet.balance_cents).where(Wallet.customer_id == customer_id)
    return int((await session.scalar(q.with_for_update() if is_postgres(session) else q)) or 0)


async def add_entry(
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
    """One ledger entry through the ORM (flushed: its id is known); a debit (amount < 0) is counted."""
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
    if amount < 0:
        _counted(session, -amount)
    return entry


async def add_debit_entry(
    session: AsyncSession,
    customer_id: int,
    cents: int,
    balance_after: int,
    kind: str,
    description: str,
    service_id: uuid.UUID | None,
    invoice_id: str | None,
) -> None:
    """A debit's ledger entry of `cents` (> 0) as one Core INSERT (no ORM object), counted."""
    _counted(session, cents)
    await _ADD_ENTRY.rows(
        session,
        {
            "customer_id": customer_id,
            "amount_cents": -cents,
            "balance_after_cents": balance_after,
            "kind": kind,
            "description": description[:500],
            "service_id": service_id,
            "invoice_id": invoice_id,
            "deposit_id": None,
            "created_at": utcnow(),
        },
    )
