"""The writer of `deposits` (issue 31): a new top-up's row and the conditional status moves that decide
between a payment and an expiry (domains/wallet/deposits.py, domains/orders/expiry.py say when). Nothing
here commits; the credit a paid deposit earns is storage/repos/wallet.py's."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.storage.models import Deposit
from proxyplane.storage.rowcount import rowcount


async def add_deposit(session: AsyncSession, deposit: Deposit) -> None:
    """A new deposit, flushed (its defaults are known)."""
    session.add(deposit)
    await session.flush()


async def move_status(
    session: AsyncSession,
    deposit_id: uuid.UUID,
    movable: tuple[str, ...],
    status: str,
    now: datetime,
    synchronize: bool = True,
) -> bool:
    """`status` (completed at `now`) if the deposit is still in one of `movable`: whether this call moved
    it (a concurrent mover loses: one conditional UPDATE). `synchronize=False`: loaded objects are not
    updated in the session (the caller reads nothing of the deposit after)."""
    current = Deposit.status == movable[0] if len(movable) == 1 else Deposit.status.in_(movable)
    stmt = update(Deposit).where(Deposit.id == deposit_id, current).values(status=status, completed_at=now)
    if not synchronize:
        stmt = stmt.execution_options(synchronize_session=False)
    return rowcount(await session.execute(stmt)) == 1
