"""One pass of the renewal job, owning its transactions: each service is handled in its own unit of work
(the decisions are domains/renewals/steps.py and domains/orders/expiry.py, which never commit), so one
service's failure or race never undoes another's. Safe to run on several workers at once."""

from __future__ import annotations

from datetime import datetime

from proxyplane.core.clock import utcnow
from proxyplane.core.errors import InsufficientBalance
from proxyplane.domains.orders import expiry
from proxyplane.domains.renewals import steps
from proxyplane.domains.renewals.service import RenewalPolicy
from proxyplane.domains.renewals.steps import PassReport, Step
from proxyplane.storage.engine import Database, UnitOfWork


async def run_pass(
    db: Database, now: datetime | None = None, policy: RenewalPolicy | None = None
) -> PassReport:
    """Renew what is due, handle suspended services, expire lapsed ones, warn those ending soon, expire
    unpaid checkouts."""
    now = now or utcnow()
    policy = policy or RenewalPolicy()
    report = PassReport()
    for number in await _numbers(db, steps.due_renewal(now, policy)):
        await _renew(db, number, now, policy, report)
    for number in await _numbers(db, steps.suspended_due(now)):
        async with db.unit_of_work() as uow:
            await _keep(uow, await steps.suspended(uow.session, number, now, policy), report)
    for number in await _numbers(db, steps.lapsed(now)):
        async with db.unit_of_work() as uow:
            await _keep(uow, await steps.expire(uow.session, number, now), report)
    for number in await _numbers(db, steps.ending_soon(now, policy)):
        async with db.unit_of_work() as uow:
            await _keep(uow, await steps.expiring_soon(uow.session, number, now, policy), report)
    async with db.unit_of_work(write=False) as uow:
        due = await expiry.due_checkouts(uow.session, now, policy.checkout_ttl)
    for number, deposit_id in due:
        async with db.unit_of_work() as uow:
            keep, cancelled = await expiry.expire_checkout(uow.session, number, deposit_id, now)
            if keep:
                await uow.commit()
        if cancelled is not None:
            report.checkouts_expired.append(cancelled)
    return report


async def _numbers(db: Database, cond: tuple[object, ...]) -> list[int]:
    async with db.unit_of_work(write=False) as uow:
        return await steps.numbers(uow.session, cond)


async def _keep(uow: UnitOfWork, step: Step, report: PassReport) -> None:
    if step.keep:
        await uow.commit()
    if step.outcome is not None and step.service_id is not None:
        getattr(report, step.outcome).append(step.service_id)


async def _renew(db: Database, number: int, now: datetime, policy: RenewalPolicy, report: PassReport) -> None:
    """Renew from the wallet; on a short balance drop that transaction and record the failure in a new one."""
    async with db.unit_of_work() as uow:
        try:
            await _keep(uow, await steps.renew(uow.session, number, now, policy), report)
            return
        except InsufficientBalance as exc:
            failure = dict(exc.extra)
    async with db.unit_of_work() as uow:
        await _keep(uow, await steps.renewal_short(uow.session, number, now, policy, failure), report)
