"""The writer of `api_key_spending` (the spending caps of API keys and their counters; what a cap means
and when a charge is refused: domains/apikeys/caps.py). Nothing here commits."""

from __future__ import annotations

import uuid

from sqlalchemy import and_, case, literal, or_, update
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.storage.models.spending import ApiKeySpending


async def add_caps(
    session: AsyncSession,
    key_id: uuid.UUID,
    daily_limit_cents: int | None,
    total_limit_cents: int | None,
    day: str,
) -> None:
    """A new key's caps row, nothing spent yet, flushed."""
    session.add(
        ApiKeySpending(
            key_id=key_id,
            daily_limit_cents=daily_limit_cents,
            total_limit_cents=total_limit_cents,
            spent_total_cents=0,
            spent_day=day,
            spent_day_cents=0,
        )
    )
    await session.flush()


async def count(session: AsyncSession, key_id: uuid.UUID, cents: int, day: str) -> bool:
    """Count `cents` on the key's counters (the day's counter starts over on a new UTC `day`) in one
    conditional UPDATE that also checks both caps; False when no row moved (a cap would be passed, or the
    key has no caps row). PostgreSQL re-checks the WHERE after the row lock; SQLite has one writer."""
    t = ApiKeySpending
    day_before = case((t.spent_day == day, t.spent_day_cents), else_=literal(0))
    moved = (
        await session.execute(
            update(t)
            .where(
                t.key_id == key_id,
                or_(t.total_limit_cents.is_(None), t.spent_total_cents + cents <= t.total_limit_cents),
                or_(t.daily_limit_cents.is_(None), and_(day_before + cents <= t.daily_limit_cents)),
            )
            .values(
                spent_total_cents=t.spent_total_cents + cents,
                spent_day_cents=day_before + cents,
                spent_day=day,
            )
            .returning(t.key_id)
            .execution_options(synchronize_session=False)
        )
    ).first()
    return moved is not None
