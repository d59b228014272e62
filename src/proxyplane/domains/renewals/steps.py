"""The renewal job's decisions, one service at a time, over a session the job owns (jobs/renewal_pass.py
opens a transaction per step and commits what a step says to keep; this module never commits).

Each step re-reads and re-checks its service (several workers may run the pass at once; claims, row locks
and conditional status changes decide who acts) and returns a `Step`: keep its changes or not, and what
the pass reports for the service."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.core.errors import Conflict, InsufficientBalance
from proxyplane.domains.events import services as service_events
from proxyplane.domains.renewals.service import (
    RenewalPolicy,
    emitted_for_term,
    end_service,
    price_of_term,
    renew_term,
    resume,
)
from proxyplane.storage.models import Service
from proxyplane.storage.repos import services as service_rows


@dataclass
class PassReport:
    renewed: list[uuid.UUID] = field(default_factory=list)
    resumed: list[uuid.UUID] = field(default_factory=list)
    suspended: list[uuid.UUID] = field(default_factory=list)
    terminated: list[uuid.UUID] = field(default_factory=list)
    expired: list[uuid.UUID] = field(default_factory=list)
    expiring_soon: list[uuid.UUID] = field(default_factory=list)
    checkouts_expired: list[uuid.UUID] = field(default_factory=list)  # unpaid orders cancelled
    short: list[uuid.UUID] = field(default_factory=list)  # renewal tried, balance short, still in term

    @property
    def changed(self) -> list[uuid.UUID]:
        return [
            *self.renewed,
            *self.resumed,
            *self.suspended,
            *self.terminated,
            *self.expired,
            *self.checkouts_expired,
        ]


@dataclass(frozen=True)
class Step:
    """A step's result: `keep` its changes (the job commits) and, when `outcome` names a PassReport list,
    report `service_id` there."""

    keep: bool
    outcome: str | None = None
    service_id: uuid.UUID | None = None


NOTHING = Step(keep=False)


def kept(outcome: str | None, svc: Service) -> Step:
    return Step(True, outcome, svc.service_id)


def due_renewal(now: datetime, policy: RenewalPolicy) -> tuple[Any, ...]:
    return (
        Service.status == "active",
        Service.auto_renew.is_(True),
        Service.current_period_end <= now + policy.renew_before,
    )


def suspended_due(now: datetime) -> tuple[Any, ...]:
    return (Service.status == "suspended", Service.current_period_end <= now)


def lapsed(now: datetime) -> tuple[Any, ...]:
    return (Service.status == "active", Service.auto_renew.is_(False), Service.current_period_end <= now)


def ending_soon(now: datetime, policy: RenewalPolicy) -> tuple[Any, ...]:
    return (
        Service.status == "active",
        Service.auto_renew.is_(False),
        Service.current_period_end > now,
        Service.current_period_end <= now + policy.expiring_soon,
    )


async def numbers(session: AsyncSession, cond: tuple[Any, ...]) -> list[int]:
    return list((await session.execute(select(Service.number).where(*cond))).scalars())


async def _locked(session: AsyncSession, number: int) -> Service | None:
    """The service row, locked on PostgreSQL (SQLite writers are serialised by BEGIN IMMEDIATE), so two
    workers deciding on a once-per-term event cannot both emit it."""
    return (
        await session.execute(select(Service).where(Service.number == number).with_for_update())
    ).scalar_one_or_none()


async def renew(session: AsyncSession, number: int, now: datetime, policy: RenewalPolicy) -> Step:
    """Renew a due auto-renewing service from the wallet. Raises InsufficientBalance (the job drops this
    transaction and runs `renewal_short` in a fresh one)."""
    svc = await session.get(Service, number)
    if svc is None or svc.status != "active" or not svc.auto_renew or svc.current_period_end is None:
        return NOTHING
    if svc.current_period_end > now + policy.renew_before:  # another worker renewed it meanwhile
        return NOTHING
    try:
        await renew_term(session, svc, now)
    except Conflict:
        return NOTHING
    return kept("renewed", svc)


async def renewal_short(
    session: AsyncSession, number: int, now: datetime, policy: RenewalPolicy, failure: dict[str, object]
) -> Step:
    """The balance was short: service.renewal_failed once per term; suspended once the term is over."""
    svc = await _locked(session, number)
    if svc is None or svc.current_period_end is None or svc.status != "active":
        return NOTHING
    if not await emitted_for_term(session, svc, "service.renewal_failed"):
        await service_events.service_event(
            session,
            svc,
            "service.renewal_failed",
            reason="insufficient_balance",
            required_cents=failure.get("required_cents"),
            balance_cents=failure.get("balance_cents"),
            suspends_at=svc.current_period_end.isoformat(),
        )
    if svc.current_period_end > now:
        return kept("short", svc)
    if not await service_rows.move_status(session, number, "active", "suspended", term_over_by=now):
        return kept(None, svc)
    await session.refresh(svc)
    await service_events.service_event(
        session,
        svc,
        "service.suspended",
        reason="non_payment",
        terminates_at=(svc.current_period_end + policy.grace).isoformat(),
    )
    return kept("suspended", svc)


async def suspended(session: AsyncSession, number: int, now: datetime, policy: RenewalPolicy) -> Step:
    """A suspended service: terminated after the grace period, else resumed from the wallet (auto-renew)."""
    svc = await session.get(Service, number)
    if svc is None or svc.status != "suspended" or svc.current_period_end is None:
        return NOTHING
    if svc.current_period_end + policy.grace <= now:
        return kept("terminated", svc) if await end_service(session, svc, "suspended", now) else NOTHING
    if not svc.auto_renew:
        return NOTHING
    try:
        await resume(session, svc, now)
    except (Conflict, InsufficientBalance):
        return NOTHING
    return kept("resumed", svc)


async def expire(session: AsyncSession, number: int, now: datetime) -> Step:
    """An active service without auto-renew whose term is over expires."""
    svc = await session.get(Service, number)
    if svc is None or not await end_service(session, svc, "active", now):
        return NOTHING
    return kept("expired", svc)


async def expiring_soon(session: AsyncSession, number: int, now: datetime, policy: RenewalPolicy) -> Step:
    """service.expiring_soon, once per term, for an active service without auto-renew near its end."""
    svc = await _locked(session, number)
    if svc is None or svc.status != "active" or svc.auto_renew or svc.current_period_end is None:
        return NOTHING
    if not now < svc.current_period_end <= now + policy.expiring_soon:
        return NOTHING
    if await emitted_for_term(session, svc, "service.expiring_soon"):
        return NOTHING
    await service_events.service_event(
        session,
        svc,
        "service.expiring_soon",
        expires_at=svc.current_period_end.isoformat(),
        renewal_price_cents=await price_of_term(session, svc),
    )
    return kept("expiring_soon", svc)
