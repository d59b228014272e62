"""Spending caps of API keys: at most N cents per UTC day and/or in total through one key.

`invoke()` puts the calling key's id into the call's context (core/call.py, `spending_key`);
`wallet.debit()` calls `charge()` before it takes the money, in the same transaction. The counters move
with one conditional UPDATE that also checks both caps (storage/repos/api_key_spending.py), so
concurrent charges through one key cannot pass a cap together (PostgreSQL re-checks the WHERE after the
row lock; SQLite has one writer). A refused charge raises SpendLimitExceeded and, like every error inside
invoke(), rolls the whole call back: nothing is charged. Keys without a cap have no row and are not
counted."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.core.call import call_context
from proxyplane.core.clock import utcnow
from proxyplane.core.errors import DomainError, ValidationFailed
from proxyplane.storage.models.spending import ApiKeySpending
from proxyplane.storage.repos import api_key_spending as spending_rows


class SpendLimitExceeded(DomainError):
    code = "spend_limit_exceeded"
    http_status = 403


@dataclass(frozen=True)
class Caps:
    daily_limit_cents: int | None
    total_limit_cents: int | None
    spent_today_cents: int
    spent_total_cents: int

    @property
    def remaining_today_cents(self) -> int | None:
        if self.daily_limit_cents is None:
            return None
        return max(0, self.daily_limit_cents - self.spent_today_cents)

    @property
    def remaining_total_cents(self) -> int | None:
        if self.total_limit_cents is None:
            return None
        return max(0, self.total_limit_cents - self.spent_total_cents)


NO_CAPS = Caps(None, None, 0, 0)


def today(now: datetime | None = None) -> str:
    return (now or utcnow()).strftime("%Y-%m-%d")


async def set_caps(
    session: AsyncSession, key_id: uuid.UUID, daily_limit_cents: int | None, total_limit_cents: int | None
) -> None:
    """Give a new key its caps (none given: no row, the key is not capped)."""
    for name, value in (
        ("spend_limit_daily_cents", daily_limit_cents),
        ("spend_limit_total_cents", total_limit_cents),
    ):
        if value is not None and value < 0:
            raise ValidationFailed(f"{name} must be 0 or more", field=name)
    if daily_limit_cents is None and total_limit_cents is None:
        return
    await spending_rows.add_caps(session, key_id, daily_limit_cents, total_limit_cents, today())


def _caps(row: ApiKeySpending, day: str) -> Caps:
    return Caps(
        daily_limit_cents=row.daily_limit_cents,
        total_limit_cents=row.total_limit_cents,
        spent_today_cents=row.spent_day_cents if row.spent_day == day else 0,
        spent_total_cents=row.spent_total_cents,
    )


async def caps_of(session: AsyncSession, key_ids: Iterable[uuid.UUID]) -> dict[uuid.UUID, Caps]:
    ids = list(key_ids)
    if not ids:
        return {}
    rows = (await session.execute(select(ApiKeySpending).where(ApiKeySpending.key_id.in_(ids)))).scalars()
    day = today()
    return {row.key_id: _caps(row, day) for row in rows}


async def charge(session: AsyncSession, cents: int, now: datetime | None = None) -> None:
    """Count `cents` against the caps of the key this call came through, or raise SpendLimitExceeded."""
    key_id = call_context(session).spending_key
    if key_id is None or cents <= 0:
        return
    day = today(now)
    if await spending_rows.count(session, key_id, cents, day):
        return
    row = await session.get(ApiKeySpending, key_id, populate_existing=True)
    if row is None:
        return  # not a capped key
    caps = _caps(row, day)
    limit: int | None
    remaining: int | None
    if caps.remaining_total_cents is not None and cents > caps.remaining_total_cents:
        which, limit, remaining = "total", caps.total_limit_cents, caps.remaining_total_cents
    else:
        which, limit, remaining = "daily", caps.daily_limit_cents, caps.remaining_today_cents
    raise SpendLimitExceeded(
        f"this charge of {cents} cents would pass the API key's {which} spending cap of {limit} cents "
        f"({remaining} cents remain{' today (UTC)' if which == 'daily' else ''}); nothing was charged",
        cap=which,
        limit_cents=limit,
        remaining_cents=remaining,
        requested_cents=cents,
    )
