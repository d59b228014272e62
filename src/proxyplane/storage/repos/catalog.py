"""The writer of new `catalog_products` rows (issue 31): the operator's new products and the demo seed's
(domains/stock/operator_ops.py, seed.py, seed_ipv6.py). Changes of a loaded product (price, active,
config) are the unit of work's. Nothing here commits."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.storage.models import CatalogProduct


async def add_product(session: AsyncSession, values: Mapping[str, Any]) -> CatalogProduct:
    """A new product with `values` (its columns), flushed (its id and defaults are known)."""
    product = CatalogProduct(**values)
    session.add(product)
    await session.flush()
    return product


async def add_products(session: AsyncSession, specs: Iterable[Mapping[str, Any]]) -> int:
    """New products, one per spec (its columns), flushed together; how many."""
    added = 0
    for spec in specs:
        session.add(CatalogProduct(**spec))
        added += 1
    await session.flush()
    return added
