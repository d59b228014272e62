"""Issue 34: an account whose email address is not confirmed does not spend (it browses, tops up and makes
keys). Orders check it in their one context read (domains/orders/context.py); every other operation that
spends money (catalog purchases, add-ons, more IPs or traffic, renewals, the legacy API's purchases and
refreshes) is checked by invoke() before its handler with this one read (decisions/accounts-email.md)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from proxyplane.core.errors import Forbidden
from proxyplane.storage.models import Customer

# operations whose own context read already refuses an unconfirmed address (the lean order path)
CHECKED_IN_CONTEXT = frozenset({"order_composite"})
MESSAGE = (
    "confirm your email address before buying: open the link we sent you (the dashboard can send it again)"
)


async def require_verified(session: Any, customer_id: int) -> None:
    """Raise 403 forbidden (reason email_unverified) unless the account's address is confirmed."""
    found = await session.execute(select(Customer.email_verified_at).where(Customer.id == customer_id))
    row = found.first()
    if row is not None and row[0] is None:
        raise Forbidden(MESSAGE, reason="email_unverified")
