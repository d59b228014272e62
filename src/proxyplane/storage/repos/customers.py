"""The writer of new `customers` rows (with the new customer's balance row: wallet.add_wallet). Nothing
here commits; changes of a loaded customer (name, password, verification, discount) are the unit of
work's."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.storage.models import Customer
from proxyplane.storage.repos import wallet


async def add_customer(session: AsyncSession, customer: Customer) -> None:
    """The new customer and its balance row at 0, flushed. The customer's INSERT runs in a savepoint: a
    taken email raises IntegrityError there and leaves the unit of work usable."""
    session.add(customer)
    async with session.begin_nested():
        await session.flush()
    wallet.add_wallet(session, customer.id)
    await session.flush()
