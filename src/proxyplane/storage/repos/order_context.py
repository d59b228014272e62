"""The order's one context read (issue 31: moved from domains/orders/context.py, which keeps what the
facts mean): the customer's partner discount, whether its address is verified, the product kind's stored
price-book overrides, the balance-low threshold, whether an enabled webhook endpoint exists, whether the
calling API key has a spending cap, and the wallet balance, in ONE statement.

Built once per (kind, key or not) with bound parameters (`customer_id`, `key_id`) and run as a driver
statement (storage/driver.py; its plain twin through the session with the lean forms off): no
construction, cache key or result processing per order.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Integer, bindparam, exists, false, select
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.storage.driver import DriverStatement
from proxyplane.storage.models import (
    Customer,
    NotificationSettings,
    PriceBookOverride,
    Wallet,
    WebhookEndpoint,
)
from proxyplane.storage.models.spending import ApiKeySpending


@dataclass(frozen=True)
class ContextRow:
    partner_discount_percent: int
    verified: bool
    overrides: dict[str, Any] | None
    balance_low_threshold_cents: int | None
    has_webhooks: bool
    capped_key: bool
    balance_cents: int


_STATEMENTS: dict[tuple[str, bool], DriverStatement] = {}


def _statement(product_kind: str, with_key: bool) -> DriverStatement:
    stmt = _STATEMENTS.get((product_kind, with_key))
    if stmt is None:
        customer = bindparam("customer_id", type_=Integer())
        overrides = (
            select(PriceBookOverride.overrides)
            .where(PriceBookOverride.product_kind == product_kind)
            .scalar_subquery()
        )
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
                overrides,
                threshold,
                hooks,
                capped,
                balance,
            ).where(Customer.id == customer)
        )
    return stmt


async def read(
    session: AsyncSession, customer_id: int, product_kind: str, key_id: uuid.UUID | None
) -> ContextRow | None:
    """The context of an order by this customer (and key) for this product kind; None: no such customer."""
    params: dict[str, Any] = {"customer_id": customer_id}
    if key_id is not None:
        params["key_id"] = key_id
    rows = await _statement(product_kind, key_id is not None).rows(session, params)
    if not rows:
        return None
    partner, verified, overrides, low, has_hooks, is_capped, balance = rows[0]
    if isinstance(overrides, str):  # SQLite's driver returns the JSON text (asyncpg's codec decodes it)
        overrides = json.loads(overrides)
    return ContextRow(
        partner_discount_percent=int(partner or 0),
        verified=bool(verified),
        overrides=overrides,
        balance_low_threshold_cents=low,
        has_webhooks=bool(has_hooks),
        capped_key=bool(is_capped),
        balance_cents=int(balance or 0),
    )
