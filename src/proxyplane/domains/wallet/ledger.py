"""The ledger list: a customer's entries newest first, paged by offset and limit at any depth in two
index lookups.

Each entry carries `seq`, its number in the customer's ledger (1, 2, 3, ... in id order, set by a
database trigger: migration 0013b). The total is the newest entry's seq (the top of the (customer_id, seq)
index, no count), and the page at offset o is the range seq in [total - o - limit + 1, total - o]: the
same rows in the same order as `ORDER BY id DESC OFFSET o LIMIT limit`, whatever o.
"""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.storage.models import LedgerEntry


async def ledger_page(
    session: AsyncSession, customer_id: int, offset: int, limit: int
) -> tuple[list[LedgerEntry], int]:
    """(entries of the page, newest first; the customer's entry count)."""
    mine = LedgerEntry.customer_id == customer_id
    total = int(await session.scalar(select(func.max(LedgerEntry.seq)).where(mine)) or 0)
    if offset >= total or limit <= 0:
        return [], total
    high = total - offset
    low = max(1, high - limit + 1)
    rows = await session.execute(
        select(LedgerEntry).where(mine, LedgerEntry.seq.between(low, high)).order_by(LedgerEntry.seq.desc())
    )
    return list(rows.scalars()), total
