"""Offset paging of a customer's rows, newest first, that stays fast at any offset.

`page(session, model, key, cond, offset, limit)`: the first page is read at once, and a short first page
is the whole list (no count: one round trip for most customers). Otherwise it counts the rows (an
index-only count where the index allows), then picks the page's keys on the index alone and loads just
those rows (a deferred join: the rows skipped by OFFSET are never read from the table). A page in the
older half is read from the other end of the index (ascending, OFFSET total - offset - limit), so no page
skips more than half of the rows. Same pages, same order as `ORDER BY key DESC OFFSET o LIMIT l`.
"""

from __future__ import annotations

from typing import Any, TypeVar

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

T = TypeVar("T")


async def page(
    session: AsyncSession, model: type[T], key: Any, cond: list[Any], offset: int, limit: int
) -> tuple[list[T], int]:
    """(rows of the page ordered by `key` descending, total rows matching `cond`)."""
    if offset == 0 and limit > 0:
        # the first page (most list calls): read it straight away; a short page is the whole list,
        # so its length is the total and no count is needed (one round trip instead of two)
        found = await session.execute(select(model).where(*cond).order_by(key.desc()).limit(limit))
        newest = list(found.scalars())
        if len(newest) < limit:
            return newest, len(newest)
        return newest, int(await session.scalar(select(func.count()).select_from(model).where(*cond)) or 0)
    total = int(await session.scalar(select(func.count()).select_from(model).where(*cond)) or 0)
    if offset >= total or limit <= 0:
        return [], total
    if offset + limit <= total - offset:  # newer half: from the newest end
        keys = select(key).where(*cond).order_by(key.desc()).offset(offset).limit(limit)
    else:  # older half: from the oldest end
        first = max(0, total - offset - limit)
        keys = select(key).where(*cond).order_by(key).offset(first).limit(total - offset - first)
    rows = await session.execute(select(model).where(key.in_(keys.scalar_subquery())).order_by(key.desc()))
    return list(rows.scalars()), total
