"""Pay as you go (issue 32.4): a plan billed per started unit of traffic used, from the wallet.

A product whose config says ``"plan": "payg"`` sells a service with a quota row of period "payg":
``payg_unit_bytes`` (the unit, 1 GB unless the config sets ``payg_unit_bytes``), ``gb_price_cents`` (the
price of one unit), ``billed_units`` (charged so far) and ``billed_hour`` (the hour of its last ledger
entry). ``settle`` (run on a locked row by the usage flush for the services it counted, by the renewal
job's pass for the rest, and when the row is made) does two things:

1. **Bill.** started = ceil(used_bytes / unit); the units started but not billed are charged in ONE
   ledger entry (wallet.debit, kind ``payg``) unless the row already has one this hour (then they wait for
   the next hour's). A wallet short of them pays the whole units it covers (never a negative balance),
   the rest stays owed on the row.
2. **Limit.** The gateway enforces ``extra_bytes`` (quota_bytes is 0) as the byte limit: the next unit is
   open only while the balance covers every unit the customer's pay-as-you-go services owe plus one unit;
   else the service may finish the unit it started (owed, covered), and when even that is not covered it is
   refused at once. Refused services carry ``limit_reached`` and the gateway names the refusal
   ``insufficient_balance`` (gateway/quotas.py); a top-up opens them again at the next pass.

Idempotent: under the row's lock, a second settle in the same hour writes no entry, and the usage flush
applies each spooled batch once (usage_batches)."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.core.clock import utcnow
from proxyplane.core.errors import ValidationFailed
from proxyplane.domains.invoices import service as invoices
from proxyplane.domains.wallet import service as wallet
from proxyplane.storage.models import Service
from proxyplane.storage.models.quotas import PAYG, ServiceQuota
from proxyplane.storage.repos import quotas as repo

GB = 1_000_000_000
MIN_UNIT, MAX_UNIT = 1_000_000, 1_000_000_000_000  # 1 MB .. 1 TB
PASS_BATCH = 500  # services settled by one pass of the job


def unit_of(config: dict[str, object]) -> int:
    """The unit of a pay-as-you-go config (422 naming ``config.payg_unit_bytes`` when out of range)."""
    unit = config.get("payg_unit_bytes", GB)
    if not isinstance(unit, int) or isinstance(unit, bool) or not MIN_UNIT <= unit <= MAX_UNIT:
        raise ValidationFailed(
            f"payg_unit_bytes must be a whole number of bytes between {MIN_UNIT} and {MAX_UNIT}",
            field="config.payg_unit_bytes",
        )
    return unit


def hour_of(now: datetime) -> datetime:
    return now.replace(minute=0, second=0, microsecond=0)


def started(row: ServiceQuota) -> int:
    unit = row.payg_unit_bytes or GB
    return -(-row.used_bytes // unit)


def owed(row: ServiceQuota) -> int:
    """Units started and not billed yet."""
    return max(0, started(row) - row.billed_units)


def _unit_text(unit: int) -> str:
    if unit % GB == 0:
        return f"{unit // GB} GB"
    return f"{unit // 1_000_000} MB" if unit % 1_000_000 == 0 else f"{unit} B"


async def _bill(session: AsyncSession, row: ServiceQuota, svc: Service, hour: datetime) -> None:
    due = owed(row)
    if due <= 0 or (row.billed_hour is not None and row.billed_hour >= hour):
        return
    rate = row.gb_price_cents
    pay = due if rate == 0 else min(due, await wallet.balance(session, svc.customer_id) // rate)
    if pay <= 0:
        return
    unit = row.payg_unit_bytes or GB
    entry = None
    if rate > 0:
        description = (
            f"Pay as you go: {pay} x {_unit_text(unit)} for service #{svc.number}, "
            f"{hour:%Y-%m-%d %H}:00 UTC"
        )
        entry = await wallet.debit(
            session, svc.customer_id, pay * rate, "payg", description, service_id=svc.service_id
        )
        await invoices.record_charge(
            session,
            svc.customer_id,
            kind="traffic",
            description=description,
            lines=[invoices.Line(f"Traffic used, per started {_unit_text(unit)}", pay, rate, pay * rate)],
            service_id=svc.service_id,
            ledger_entries=[entry],
        )
    await repo.payg_billed(session, row, pay, hour)


async def settle(session: AsyncSession, row: ServiceQuota, svc: Service, now: datetime | None = None) -> None:
    """Bill the row's started units (one entry an hour at most) and set the limit the wallet covers (the
    module doc). ``row`` must be locked (repo.locked) and of period "payg"."""
    now = now or utcnow()
    await _bill(session, row, svc, hour_of(now))
    unit, rate, begun = row.payg_unit_bytes or GB, row.gb_price_cents, started(row)
    if rate == 0:
        limit = (begun + 1) * unit
    else:
        others = await repo.payg_rows_of(session, svc.customer_id)
        debt = sum(owed(r) for r in others if r.service_id != row.service_id) + owed(row)
        free = await wallet.balance(session, svc.customer_id) - debt * rate
        if free >= rate:
            limit = (begun + 1) * unit  # the next unit is covered
        elif free >= 0:
            limit = begun * unit  # the started unit is covered (owed): finish it
        else:
            limit = min(row.used_bytes, row.billed_units * unit)  # owed units not covered: refused now
    await repo.payg_limit(session, row, limit)


async def settle_ids(session: AsyncSession, ids: list[uuid.UUID], now: datetime | None = None) -> int:
    """Settle the pay-as-you-go rows among ``ids`` (each locked, in id order); the count settled."""
    payg = await repo.payg_among(session, ids)
    if not payg:
        return 0
    rows = (await session.execute(select(Service).where(Service.service_id.in_(payg)))).scalars()
    done = 0
    for svc in sorted(rows, key=lambda s: str(s.service_id)):
        row = await repo.locked(session, svc.service_id)
        if row is not None and row.period == PAYG:
            await settle(session, row, svc, now)
            done += 1
    return done


async def settle_due(session: AsyncSession, now: datetime | None = None) -> int:
    """The job's pass: rows with units to bill from an earlier hour, or refused (a top-up may open them)."""
    now = now or utcnow()
    return await settle_ids(session, await repo.payg_due(session, hour_of(now), PASS_BATCH), now)
