"""The writer of `customer_billing_details` (what an invoice names). Nothing here commits; field changes
of a loaded row are the unit of work's (domains/accounts/billing.py)."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.storage.models.billing_details import CustomerBillingDetails


async def get_or_add(session: AsyncSession, customer_id: int) -> CustomerBillingDetails:
    """The customer's row, a blank one added (not flushed) when there is none."""
    row = await session.get(CustomerBillingDetails, customer_id)
    if row is None:
        row = CustomerBillingDetails(customer_id=customer_id, company="", address="", vat_id="")
        session.add(row)
    return row
