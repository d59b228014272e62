"""The pay-as-you-go pass of the renewal job (issue 32.4, every minute): services that owe units of an
earlier hour and used nothing since (the usage flush settles those it counts) get their hour's ledger
entry, and refused ones are opened again when a top-up covers the next unit (domains/quotas/payg.py).
Several copies at once are safe: each row is settled under its lock, one entry an hour at most."""

from __future__ import annotations

from datetime import datetime

from proxyplane.domains.quotas import payg
from proxyplane.storage.engine import Database


async def payg_pass(db: Database, now: datetime | None = None) -> int:
    """The number of services settled."""
    async with db.unit_of_work() as uow:
        done = await payg.settle_due(uow.session, now)
        await uow.commit()
    return done
