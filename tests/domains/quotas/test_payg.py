"""Pay as you go (issue 32.4) in the store: the usage flush bills per started unit from the wallet, one
ledger entry per service per hour at most, idempotent; a wallet that cannot pay the next unit refuses the
service (limit_reached: the gateway says insufficient_balance) and is never taken below zero; a top-up opens
it again at the renewal job's pass, which also bills an idle service's owed units of an earlier hour."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import select

from proxyplane.core.clock import utcnow
from proxyplane.domains.quotas import payg
from proxyplane.domains.quotas import service as quotas
from proxyplane.domains.quotas.metering import apply_usage
from proxyplane.domains.wallet.service import balance
from proxyplane.jobs.payg_pass import payg_pass
from proxyplane.platform import Platform
from proxyplane.storage.models import LedgerEntry
from tests.domains.quotas.support import quota_row, service_of
from tests.domains.subusers.support import make_service
from tests.support import Account

pytestmark = pytest.mark.anyio
UNIT = 1_000_000
RATE = 7


async def payg_service(platform: Platform, account: Account, unit: int = UNIT, rate: int = RATE) -> Any:
    params = {"plan": "payg", "payg_unit_bytes": unit, "gb_price_cents": rate}
    params["exit_pool"] = "proxy_datacenter"
    svc = await make_service(platform, account, parameters=params)
    async with platform.db.unit_of_work() as uow:
        assert await quotas.ensure_row(uow.session, await service_of(uow.session, svc.service_id)) is not None
        await uow.commit()
    return svc


async def used(platform: Platform, service_id: uuid.UUID, nbytes: int, now: datetime) -> None:
    """A usage flush of ``nbytes`` for the service at ``now``."""
    row = {"service_id": service_id, "bytes_up": nbytes // 2, "bytes_down": nbytes - nbytes // 2}
    async with platform.db.unit_of_work() as uow:
        await apply_usage(uow.session, [{**row, "requests": 1}], now)
        await uow.commit()


async def ledger(platform: Platform, service_id: uuid.UUID) -> list[int]:
    async with platform.db.unit_of_work(write=False) as uow:
        rows = await uow.session.execute(
            select(LedgerEntry.amount_cents)
            .where(LedgerEntry.service_id == service_id, LedgerEntry.kind == "payg")
            .order_by(LedgerEntry.created_at)
        )
        return [int(a) for a in rows.scalars()]


async def wallet(platform: Platform, account: Account) -> int:
    async with platform.db.unit_of_work(write=False) as uow:
        return await balance(uow.session, account.customer_id)


def an_hour(now: datetime) -> datetime:
    return payg.hour_of(now) + timedelta(minutes=10)  # well inside one hour


async def test_billed_per_started_unit_once_an_hour(platform: Platform, account: Account) -> None:
    await account.credit(100)
    svc = await payg_service(platform, account)
    row = await quota_row(platform, svc.service_id)
    assert (row.period, row.extra_bytes, row.limit_reached) == ("payg", UNIT, False)  # the next unit is open
    h = an_hour(utcnow())
    await used(platform, svc.service_id, 2_500_000, h)  # 3 units started: one entry of 3 x 7
    assert await ledger(platform, svc.service_id) == [-21]
    row = await quota_row(platform, svc.service_id)
    assert (row.billed_units, row.extra_bytes, row.limit_reached) == (3, 4 * UNIT, False)
    await used(platform, svc.service_id, 1_200_000, h + timedelta(minutes=5))  # 4th unit: same hour, owed
    assert await ledger(platform, svc.service_id) == [-21]
    row = await quota_row(platform, svc.service_id)
    assert (row.billed_units, row.extra_bytes) == (3, 5 * UNIT)
    async with platform.db.unit_of_work(write=False) as uow:
        loaded = await service_of(uow.session, svc.service_id)
        u = await quotas.usage(uow.session, loaded)
    assert u is not None
    assert u.payg == {"unit_bytes": UNIT, "unit_cents": RATE, "billed_units": 3, "owed_units": 1}
    assert u.resets_at is None and not u.exhausted
    # the job's pass in the same hour writes nothing (idempotent); in the next hour it bills the owed unit
    await payg_pass(platform.db, h + timedelta(minutes=20))
    assert await ledger(platform, svc.service_id) == [-21]
    await payg_pass(platform.db, h + timedelta(hours=1))
    await payg_pass(platform.db, h + timedelta(hours=1, minutes=1))
    entries = await ledger(platform, svc.service_id)
    assert entries == [-21, -7]
    used_bytes = (await quota_row(platform, svc.service_id)).used_bytes
    assert -sum(entries) == -(-used_bytes // UNIT) * RATE  # the ledger equals its started units x rate
    assert await wallet(platform, account) == 100 - 28


async def test_a_short_wallet_refuses_and_a_top_up_opens_again(platform: Platform, account: Account) -> None:
    svc = await payg_service(platform, account)
    row = await quota_row(platform, svc.service_id)
    assert row.limit_reached and row.extra_bytes == 0  # nothing in the wallet: refused from the start
    await account.credit(10)
    h = an_hour(utcnow())
    await payg_pass(platform.db, h)
    row = await quota_row(platform, svc.service_id)
    assert (row.limit_reached, row.extra_bytes) == (False, UNIT)
    await used(platform, svc.service_id, 1_500_000, h + timedelta(minutes=1))  # 2 started, 1 payable
    assert await ledger(platform, svc.service_id) == [-7]
    assert await wallet(platform, account) == 3  # never below zero
    row = await quota_row(platform, svc.service_id)
    assert row.limit_reached and row.billed_units == 1  # the owed unit is not covered: refused now
    await account.credit(100)
    await payg_pass(platform.db, h + timedelta(minutes=2))  # same hour: opened (owed covered), no entry
    row = await quota_row(platform, svc.service_id)
    assert (row.limit_reached, row.extra_bytes) == (False, 3 * UNIT)
    assert await ledger(platform, svc.service_id) == [-7]
    await payg_pass(platform.db, h + timedelta(hours=1))
    assert await ledger(platform, svc.service_id) == [-7, -7]
    assert await wallet(platform, account) == 96


async def test_the_next_unit_needs_every_service_debt_covered(platform: Platform, account: Account) -> None:
    """Two pay-as-you-go services of one customer: the owed units of both count against the balance."""
    await account.credit(3 * RATE)
    a, b = await payg_service(platform, account), await payg_service(platform, account)
    h = an_hour(utcnow())
    await used(platform, a.service_id, 100, h)  # a: 1 unit billed now (balance 14)
    await used(platform, a.service_id, UNIT, h + timedelta(minutes=1))  # a: 2nd unit owed this hour
    await used(platform, b.service_id, 100, h + timedelta(minutes=2))  # b: 1 unit billed (balance 7)
    row_b = await quota_row(platform, b.service_id)
    # free = 7 - a's owed unit (7) = 0: b may finish its unit, not start another
    assert (row_b.billed_units, row_b.extra_bytes, row_b.limit_reached) == (1, UNIT, False)
    assert await wallet(platform, account) == RATE


async def test_add_traffic_and_quota_changes_refused_for_payg(platform: Platform, account: Account) -> None:
    from proxyplane.core.errors import Conflict, ValidationFailed

    await account.credit(100)
    svc = await payg_service(platform, account)
    async with platform.db.unit_of_work() as uow:
        loaded = await service_of(uow.session, svc.service_id)
        with pytest.raises(Conflict):
            await quotas.add_traffic(uow.session, loaded, 1)
        with pytest.raises(Conflict):
            await quotas.set_plan(
                uow.session, loaded, quota_bytes=5, quota_requests=None, period=None, gb_price_cents=None
            )
    with pytest.raises(ValidationFailed) as bad:
        quotas.validate_config({"plan": "payg", "payg_unit_bytes": 10})
    assert bad.value.extra["field"] == "config.payg_unit_bytes"
