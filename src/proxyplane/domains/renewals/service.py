"""Auto-renewal, suspension for non-payment, resume, and expiry.

Rules (docs/decisions/money.md "Add-ons, refresh, invoices, renewals"):
- auto_renew on: from `renew_before` ahead of the term end the job renews from the wallet for another
  `period_months` (service at its renewal price with the term discount, plus active add-ons at their
  monthly price); the new term follows the old one. One renewal per (service, term end): a unique claim
  row, so two workers never renew the same term twice.
- balance short: retried on every pass until the term ends; then the service is `suspended` (not served,
  IPs kept). During the grace period each pass retries (a resume from the wallet); `resume` does the same
  on request. A resumed service starts a fresh term from the moment it resumes.
- after the grace period a suspended service is terminated: status `expired`, IPs back to stock, add-ons
  ended without refund.
- auto_renew off: at the term end the service expires (IPs back to stock, add-ons ended); from
  `expiring_soon` before the end, `service.expiring_soon` is emitted once per term.
Events (in the transaction of the change): service.renewed, service.renewal_failed (once per term),
service.suspended, service.expiring_soon, service.expired.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.core.clock import utcnow
from proxyplane.core.errors import Conflict
from proxyplane.domains.accounts.service import get_customer
from proxyplane.domains.addons import service as addons
from proxyplane.domains.events import services as service_events
from proxyplane.domains.invoices import service as invoices
from proxyplane.domains.pricing.store import load_pricebooks
from proxyplane.domains.quotas import service as quotas
from proxyplane.domains.services import service as services
from proxyplane.domains.stock import service as stock
from proxyplane.domains.wallet import service as wallet
from proxyplane.storage.models import Event, Service
from proxyplane.storage.repos import renewal_claims
from proxyplane.storage.repos import services as service_rows


@dataclass(frozen=True)
class RenewalPolicy:
    renew_before: timedelta = timedelta(days=1)
    grace: timedelta = timedelta(days=3)
    expiring_soon: timedelta = timedelta(days=3)
    checkout_ttl: timedelta = timedelta(minutes=60)

    @classmethod
    def from_env(cls) -> RenewalPolicy:
        """PROXYPLANE_RENEW_BEFORE_HOURS (default 24), PROXYPLANE_RENEWAL_GRACE_HOURS (default 72),
        PROXYPLANE_EXPIRING_SOON_HOURS (default 72), PROXYPLANE_CHECKOUT_TTL_MINUTES (default 60)."""
        return cls(
            renew_before=timedelta(hours=float(os.environ.get("PROXYPLANE_RENEW_BEFORE_HOURS", "24"))),
            grace=timedelta(hours=float(os.environ.get("PROXYPLANE_RENEWAL_GRACE_HOURS", "72"))),
            expiring_soon=timedelta(hours=float(os.environ.get("PROXYPLANE_EXPIRING_SOON_HOURS", "72"))),
            checkout_ttl=timedelta(minutes=float(os.environ.get("PROXYPLANE_CHECKOUT_TTL_MINUTES", "60"))),
        )


async def term_lines(session: AsyncSession, svc: Service) -> tuple[list[invoices.Line], list[tuple]]:  # type: ignore[type-arg]
    """Invoice lines of one more term: the service (term discount) and its active add-ons."""
    months = svc.period_months
    book = (await load_pricebooks(session)).get(svc.product_kind)
    percent = book.term_discount_percent(months) if book else 0
    charge = services.renewal_charge_cents(svc.renewal_price_cents, months, percent)
    gross = svc.renewal_price_cents * months
    lines = [
        invoices.Line(
            f"Service #{svc.number} ({svc.product_kind}), {months} month(s)",
            months,
            svc.renewal_price_cents,
            gross,
        )
    ]
    if gross != charge:
        lines.append(
            invoices.Line(f"Term discount {months} months ({percent} %)", 1, charge - gross, charge - gross)
        )
    partner = (await get_customer(session, svc.customer_id)).partner_discount_percent
    extra = await addons.renewal_lines(session, svc, months, partner)
    lines.extend(line for _, line in extra)
    return lines, extra


async def price_of_term(session: AsyncSession, svc: Service) -> int:
    lines, _ = await term_lines(session, svc)
    return sum(line.amount_cents for line in lines)


async def _charge_term(
    session: AsyncSession,
    svc: Service,
    new_start: datetime | None,
    new_end: datetime,
    kind: str,
    now: datetime,
) -> int:
    """Debit one term (402 leaves the transaction to be rolled back), extend add-ons, write the invoice."""
    lines, extra = await term_lines(session, svc)
    total = sum(line.amount_cents for line in lines)
    addon_total = sum(line.amount_cents for _, line in extra)
    entry = None
    what = "Resume" if kind == "resume" else "Renewal"
    if total > 0:
        entry = await wallet.debit(
            session,
            svc.customer_id,
            total,
            "renewal",
            f"{what} of service #{svc.number} for {svc.period_months} month(s)",
            service_id=svc.service_id,
        )
    for addon, line in extra:
        addons.extend(addon, line, new_end, new_start)
    service_part = total - addon_total
    if new_start is not None:
        svc.current_period_start, svc.period_price_cents = new_start, service_part
    else:
        svc.period_price_cents += service_part
    svc.current_period_end = new_end
    await quotas.renewed(session, svc.service_id, now)  # a "term" quota starts a new period (issue 32)
    await invoices.record_charge(
        session,
        svc.customer_id,
        kind="renewal",
        description=f"{'Resume' if kind == 'resume' else 'Renewal'} of service #{svc.number}",
        lines=lines,
        service_id=svc.service_id,
        ledger_entries=[entry],
        now=now,
    )
    await session.flush()
    await service_events.service_event(
        session,
        svc,
        "service.renewed",
        months=svc.period_months,
        charged_cents=total,
        resumed=kind == "resume",
    )
    return total


async def renew_term(session: AsyncSession, svc: Service, now: datetime) -> int:
    """Automatic renewal of the current term (claimed once per term end). Raises Conflict when another
    worker already renewed this term, InsufficientBalance when the wallet is short."""
    assert svc.current_period_end is not None
    old_end, service_id = svc.current_period_end, svc.service_id
    try:
        claim = await renewal_claims.claim(session, service_id, old_end, now)
    except IntegrityError:
        raise Conflict(f"the term ending {old_end} of service {service_id} is already renewed") from None
    charged = await _charge_term(
        session, svc, None, services.add_months(old_end, svc.period_months), "renewal", now
    )
    claim.charged_cents = charged
    await session.flush()
    return charged


def suspended_for_nonpayment(svc: Service, now: datetime) -> bool:
    return svc.status == "suspended" and svc.current_period_end is not None and svc.current_period_end <= now


async def resume(session: AsyncSession, svc: Service, now: datetime | None = None) -> int:
    """Pay one term from the wallet and reactivate a service suspended for non-payment; the new term
    starts now. Idempotent by the conditional status change (a second concurrent resume fails)."""
    now = now or utcnow()
    if svc.status == "active" and services.effective_status(svc, now) == "active":
        raise Conflict(f"service {svc.service_id} is active; nothing to resume")
    if not suspended_for_nonpayment(svc, now):
        raise Conflict(
            f"service {svc.service_id} is {services.effective_status(svc, now)}; it cannot be resumed"
        )
    if not await service_rows.move_status(session, svc.number, "suspended", "active"):
        raise Conflict(f"service {svc.service_id} was resumed or ended meanwhile")
    await session.refresh(svc)
    return await _charge_term(session, svc, now, services.add_months(now, svc.period_months), "resume", now)


async def set_auto_renew(session: AsyncSession, svc: Service, enabled: bool) -> None:
    if svc.status in ("expired", "cancelled"):
        raise Conflict(f"service {svc.service_id} is {svc.status}")
    svc.auto_renew = enabled
    await session.flush()


async def end_service(session: AsyncSession, svc: Service, from_status: str, now: datetime) -> bool:
    """Expire a service (term over, not renewed): IPs back to stock, add-ons ended without refund."""
    if not await service_rows.move_status(session, svc.number, from_status, "expired", purchase_key=None):
        return False
    await stock.release(session, svc.service_id, svc.product_kind)
    await addons.cancel_all(session, svc.service_id, now, refund=False)
    await session.refresh(svc)
    reason = "terminated_after_grace" if from_status == "suspended" else "term_ended"
    await service_events.service_event(session, svc, "service.expired", reason=reason)
    return True


async def emitted_for_term(session: AsyncSession, svc: Service, event_type: str) -> bool:
    """Whether `event_type` was already emitted for this service's current term (the outbox is the
    record: events carry `service_id` and `current_period_end`)."""
    end = svc.current_period_end.isoformat() if svc.current_period_end is not None else None
    rows = await session.execute(
        select(Event.data).where(Event.customer_id == svc.customer_id, Event.type == event_type)
    )
    sid = str(svc.service_id)
    return any(d.get("service_id") == sid and d.get("current_period_end") == end for (d,) in rows.all())


# --- hooks for the services domain's manual renew and cancel ----------------------------------------


async def after_manual_renew(
    session: AsyncSession, svc: Service, months: int, charged: int, now: datetime | None = None
) -> int:
    """services.renew charged the service part of `months` more: charge the active add-ons for the same
    extension and write the renewal invoice. Returns the add-ons' charge."""
    now = now or utcnow()
    assert svc.current_period_end is not None
    partner = (await get_customer(session, svc.customer_id)).partner_discount_percent
    extra = await addons.renewal_lines(session, svc, months, partner)
    addon_total = sum(line.amount_cents for _, line in extra)
    entries = []
    if addon_total > 0:
        entries.append(
            await wallet.debit(
                session,
                svc.customer_id,
                addon_total,
                "renewal",
                f"Add-ons of service #{svc.number} for {months} month(s)",
                service_id=svc.service_id,
            )
        )
    for addon, line in extra:
        addons.extend(addon, line, svc.current_period_end)
    await quotas.renewed(session, svc.service_id, now)  # a "term" quota starts a new period (issue 32)
    gross = svc.renewal_price_cents * months
    lines = [
        invoices.Line(
            f"Service #{svc.number} ({svc.product_kind}), {months} month(s)",
            months,
            svc.renewal_price_cents,
            gross,
        )
    ]
    if charged != gross:
        lines.append(invoices.Line(f"Term discount {months} months", 1, charged - gross, charged - gross))
    lines.extend(line for _, line in extra)
    await invoices.record_charge(
        session,
        svc.customer_id,
        kind="renewal",
        description=f"Renewal of service #{svc.number}",
        lines=lines,
        service_id=svc.service_id,
        ledger_entries=entries,
        now=now,
    )
    return addon_total


async def after_cancel(session: AsyncSession, svc: Service, refund: int, now: datetime | None = None) -> int:
    """services.cancel refunded `refund` for the service: end its add-ons (refunding their unused time) and
    write the credit notes. Returns the add-ons' refund."""
    now = now or utcnow()
    addon_refund = await addons.cancel_all(session, svc.service_id, now, refund=True)
    await invoices.record_refund(
        session,
        svc.customer_id,
        svc.service_id,
        refund,
        f"Service #{svc.number} cancelled: unused time",
        now=now,
    )
    return addon_refund
