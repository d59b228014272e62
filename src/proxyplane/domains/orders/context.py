"""What an order needs to know before it writes, read in ONE statement (storage/repos/order_context.py):
the customer's partner discount, whether its address is verified (issue 34: no order before), the price
book's stored overrides, the balance-low threshold, whether the customer has an enabled webhook endpoint,
whether the calling API key has a spending cap and the wallet balance (a snapshot: it only chooses the
order's path, the debit itself stays a guarded UPDATE)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.core.errors import Forbidden, Unauthorized
from proxyplane.domains.pricing import PriceBook
from proxyplane.domains.pricing.store import book_with
from proxyplane.storage.repos import order_context


@dataclass(frozen=True)
class OrderContext:
    book: PriceBook
    partner_discount_percent: int
    balance_low_threshold_cents: int | None
    has_webhooks: bool
    capped_key: bool
    balance_cents: int


async def load(
    session: AsyncSession, customer_id: int, product_kind: str, key_id: uuid.UUID | None
) -> OrderContext:
    row = await order_context.read(session, customer_id, product_kind, key_id)
    if row is None:
        raise Unauthorized("unknown customer")
    if not row.verified:  # issue 34: an unverified account browses and tops up, but does not buy
        raise Forbidden(
            "confirm your email address before buying: open the link we sent you (the dashboard can "
            "send it again)",
            reason="email_unverified",
        )
    return OrderContext(
        book=book_with(product_kind, row.overrides),
        partner_discount_percent=row.partner_discount_percent,
        balance_low_threshold_cents=row.balance_low_threshold_cents,
        has_webhooks=row.has_webhooks,
        capped_key=row.capped_key,
        balance_cents=row.balance_cents,
    )
