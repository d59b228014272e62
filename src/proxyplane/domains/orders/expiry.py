"""Unpaid checkouts expire: an order whose remainder checkout is still unpaid `ttl` after it was opened
is cancelled (the wallet part refunded, the IPs back to stock, the open invoice void) and its deposit is
marked `expired`, so the processor confirming it later credits the wallet instead of activating the order
(see wallet/deposits.apply_payment_event). Run by the renewal job (domains/renewals.run_pass)."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

from sqlalchemy import select, update

from proxyplane.domains.invoices import service as invoices
from proxyplane.domains.services import service as services
from proxyplane.storage.engine import Database
from proxyplane.storage.models import Deposit, Service


async def expire_checkouts(db: Database, now: datetime, ttl: timedelta) -> list[uuid.UUID]:
    """Cancel the pending orders whose checkout is older than `ttl`; each in its own transaction. The
    conditional `pending -> expired` change of the deposit decides against a payment arriving at the same
    moment: whichever moves the deposit first wins. Returns the cancelled services' ids."""
    async with db.unit_of_work(write=False) as uow:
        rows = await uow.session.execute(
            select(Service.number, Deposit.id)
            .join(Deposit, Deposit.id == Service.deposit_id)
            .where(
                Service.status == "pending",
                Deposit.status == "pending",
                Deposit.created_at <= now - ttl,
            )
        )
        due = list(rows.all())
    cancelled = []
    for number, deposit_id in due:
        async with db.unit_of_work() as uow:
            moved = await uow.session.execute(
                update(Deposit)
                .where(Deposit.id == deposit_id, Deposit.status == "pending")
                .values(status="expired", completed_at=now)
                .execution_options(synchronize_session=False)
            )
            if moved.rowcount != 1:  # type: ignore[attr-defined]
                continue  # paid or failed meanwhile
            svc = await uow.session.get(Service, number)
            if svc is None or svc.status != "pending":
                await uow.commit()
                continue
            await services.cancel(uow.session, svc, now)
            await invoices.settle_deposit_invoice(uow.session, deposit_id, paid=False)
            await uow.commit()
            cancelled.append(svc.service_id)
    return cancelled
