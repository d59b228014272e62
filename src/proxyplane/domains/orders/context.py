"""What an order needs to know before it writes, read in ONE statement: the customer's partner
discount, whether its address is verified (issue 34: no order before), the price book's stored
overrides, the balance-low threshold, whether the customer has an enabled webhook endpoint, whether
the calling API key has a spending cap and the wallet balance (a snapshot: it only chooses the order's
path, the debit itself stays a guarded UPDATE)."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Integer, bindparam, exists, false, select
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.core.errors import Forbidden, Unauthorized
from proxyplane.domains.pricing import PriceBook
from proxyplane.domains.pricing.store import book_with, overrides_of
from proxyplane.storage.driver import DriverStatement
from proxyplane.storage.models import Customer, NotificationSettings, Wallet, WebhookEndpoint
from proxyplane.storage.models.spending import ApiKeySpending


@dataclass(frozen=True)
class OrderContext:
    book: PriceBook
    partner_discount_percent: int
    balance_low_threshold_cents: int | None
    has_webhooks: bool
    capped_key: bool
    balance_cents: int


_STATEMENTS: dict[tuple[str, bool], DriverStatement] = {}


def _statement(product_kind: str, with_key: bool) -> DriverStatement:
    """The context read of a product kind, built once per (kind, key or not) with bound parameters
    (`customer_id`, `key_id`) and run on the driver connection (storage/driver.py): no construction,
    cache key or result processing per order (the one JSON value is decoded in `load`)."""
    stmt = _STATEMENTS.get((product_kind, with_key))
    if stmt is None:
        customer = bindparam("customer_id", type_=Integer())
        threshold = (
            select(NotificationSettings.balance_low_threshold_cents)
            .where(NotificationSettings.customer_id == customer)
            .scalar_subquery()
        )
        hooks = exists().where(WebhookEndpoint.customer_id == customer, WebhookEndpoint.enabled.is_(True))
        balance = select(Wallet.balance_cents).where(Wallet.customer_id == customer).scalar_subquery()
        capped = exists().where(ApiKeySpending.key_id == bindparam("key_id")) if with_key else false()
        stmt = _STATEMENTS[(product_kind, with_key)] = DriverStatement(
            select(
                Customer.partner_discount_percent,
                Customer.email_verified_at.is_not(None),
                overrides_of(product_kind),
                threshold,
                hooks,
                capped,
                balance,
            ).where(Customer.id == customer)
        )
    return stmt


async def load(
    session: AsyncSession, customer_id: int, product_kind: str, key_id: uuid.UUID | None
) -> OrderContext:
    params: dict[str, Any] = {"customer_id": customer_id}
    if key_id is not None:
        params["key_id"] = key_id
    rows = await _statement(product_kind, key_id is not None).rows(session, params)
    if not rows:
        raise Unauthorized("unknown customer")
    partner, verified, overrides, low, has_hooks, is_capped, balance = rows[0]
    if not verified:  # issue 34: an unverified account browses and tops up, but does not buy
        raise Forbidden(
            "confirm your email address before buying: open the link we sent you (the dashboard can "
            "send it again)",
            reason="email_unverified",
        )
    if isinstance(overrides, str):  # SQLite returns the JSON text (asyncpg's codec already decoded it)
        overrides = json.loads(overrides)
    return OrderContext(
        book=book_with(product_kind, overrides),
        partner_discount_percent=int(partner or 0),
        balance_low_threshold_cents=low,
        has_webhooks=bool(has_hooks),
        capped_key=bool(is_capped),
        balance_cents=int(balance or 0),
    )
