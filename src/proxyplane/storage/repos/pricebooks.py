"""The writer of `pricebook_overrides` (issue 31): the operator's stored overrides of a kind's price book
(domains/pricing/store.py validates and merges them). Nothing here commits."""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.storage.models import PriceBookOverride


async def store_overrides(
    session: AsyncSession, row: PriceBookOverride | None, product_kind: str, overrides: dict[str, Any]
) -> None:
    """The kind's overrides become `overrides`: `row` (the loaded one, or None) updated or a new row
    added, flushed."""
    if row is None:
        session.add(PriceBookOverride(product_kind=product_kind, overrides=overrides))
    else:
        row.overrides = overrides
    await session.flush()


async def delete_overrides(session: AsyncSession, row: PriceBookOverride) -> None:
    """The kind's stored overrides removed (its default book again), flushed."""
    await session.delete(row)
    await session.flush()
