"""The operator's price books: DEFAULT_PRICEBOOKS with the overrides stored in `pricebook_overrides`."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.domains.pricing.rules import (
    DEFAULT_PRICEBOOKS,
    PriceBook,
    pricebook_with_overrides,
    pricebooks_from_dict,
)
from proxyplane.storage.models import PriceBookOverride
from proxyplane.storage.repos import pricebooks as pricebook_rows


async def load_pricebooks(session: AsyncSession) -> dict[str, PriceBook]:
    rows = (await session.execute(select(PriceBookOverride))).scalars().all()
    return pricebooks_from_dict({r.product_kind: r.overrides for r in rows if r.overrides})


async def load_pricebook(session: AsyncSession, product_kind: str) -> PriceBook:
    return (await load_pricebooks(session))[product_kind]


async def set_overrides(session: AsyncSession, product_kind: str, overrides: dict[str, Any]) -> PriceBook:
    """Merge `overrides` into the stored ones for a kind (validated first); returns the new book."""
    from proxyplane.domains.pricing.rules import DEFAULT_PRICEBOOKS

    if product_kind not in DEFAULT_PRICEBOOKS:
        raise ValueError(f"unknown product kind {product_kind!r}")
    row = await session.get(PriceBookOverride, product_kind)
    merged = {**(row.overrides if row else {}), **overrides}
    book = pricebook_with_overrides(DEFAULT_PRICEBOOKS[product_kind], merged)  # validates
    await pricebook_rows.store_overrides(session, row, product_kind, merged)
    return book


async def reset_overrides(session: AsyncSession, product_kind: str) -> None:
    row = await session.get(PriceBookOverride, product_kind)
    if row is not None:
        await pricebook_rows.delete_overrides(session, row)


def book_with(product_kind: str, overrides: dict[str, Any] | None) -> PriceBook:
    """The price book of a kind given its stored overrides (None or empty: the default book)."""
    if product_kind not in DEFAULT_PRICEBOOKS:
        raise ValueError(f"unknown product kind {product_kind!r}")
    return pricebooks_from_dict({product_kind: overrides} if overrides else {})[product_kind]
