"""Unpaid checkouts expire: an order whose remainder checkout is still unpaid `ttl` after it was opened
is cancelled (the wallet part refunded, the IPs back to stock, the open invoice void) and its deposit is
marked `expired`, so the processor confirming it later credits the wallet instead of activating the order
(see wallet/deposits.apply_payment_event). Driven by the renewal job (jobs/renewal_pass.py), which runs
each checkout in its own transaction and commits what `expire_checkout` says to keep; nothing here commits."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.domains.invoices import service as invoices
from proxyplane.domains.services import service as services
from proxyplane.storage.models import Deposit, Service
from proxyplane.storage.repos import deposits as deposit_rows


async def due_checkouts(session: AsyncSession, now: datetime, ttl: timedelta) -> list[tuple[int, uuid.UUID]]:
    """(service number, deposit id) of the pending orders whose checkout is older than `ttl`."""
    rows = await session.execute(
        select(Service.number, Deposit.id)
        .join(Deposit, Deposit.id == Service.deposit_id)
        .where(
            Service.status == "pending",
            Deposit.status == "pending",
            Deposit.created_at <= now - ttl,
        )
    )
    return [(number, deposit_id) for number, deposit_id in rows.all()]


async def expire_checkout(
    session: AsyncSession, number: int, deposit_id: uuid.UUID, now: datetime
) -> tuple[bool, uuid.UUID | None]:
    """Expire one checkout: (keep the changes, the cancelled service's id or None). The conditional
    `pending -> expired` change of the deposit decides against a payment arriving at the same moment:
    whichever moves the deposit first wins."""
    if not await deposit_rows.move_status(
        session, deposit_id, ("pending",), "expired", now, synchronize=False
    ):
        return False, None  # paid or failed meanwhile
    svc = await session.get(Service, number)
    if svc is None or svc.status != "pending":
        return True, None
    await services.cancel(session, svc, now)
    await invoices.settle_deposit_invoice(session, deposit_id, paid=False)
    return True, svc.service_id
