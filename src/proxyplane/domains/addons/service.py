"""Add-ons of a service: UDP, extra whitelist slots, extra concurrent connections.

An add-on is bought for the rest of the service's current term (pricing.addon_charge_cents), renews with
the service (its monthly price x months, no term discount), and is cancelled with a pro-rata refund of
the unused time (pricing.refund_unused over what was paid for [period_start, period_end]).
What the gateway enforces comes from `entitlements(session, service_id)`.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import NamedTuple

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.core.clock import utcnow
from proxyplane.core.errors import Conflict, NotFound, PriceChanged, ValidationFailed
from proxyplane.domains.addons.entitlements import DEFAULT_BOOK as DEFAULT_BOOK  # what the gateway enforces
from proxyplane.domains.addons.entitlements import Entitlements as Entitlements  # (entitlements.py; these
from proxyplane.domains.addons.entitlements import entitlements as entitlements  # names stay importable
from proxyplane.domains.addons.entitlements import entitlements_many as entitlements_many  # from here)
from proxyplane.domains.events import services as service_events
from proxyplane.domains.invoices import service as invoices
from proxyplane.domains.pricing import (
    PriceBook,
    PricingError,
    addon_charge_cents,
    addon_monthly_cents,
    refund_unused,
)
from proxyplane.domains.pricing.store import load_pricebooks
from proxyplane.domains.services import service as services
from proxyplane.domains.wallet import service as wallet
from proxyplane.storage.models import Service, ServiceWhitelist
from proxyplane.storage.models.billing import ServiceAddon
from proxyplane.storage.repos import addons as addon_rows
from proxyplane.storage.repos import services as service_rows

NAMES = {
    "udp": "UDP (SOCKS5 UDP ASSOCIATE)",
    "extra_whitelist_slots": "Extra whitelist IP slots",
    "extra_connections": "Extra concurrent connections",
}


class Offer(NamedTuple):
    kind: str
    per: str
    unit_size: int
    monthly_cents: int  # for quantity 1 at the service's size
    price_cents: int  # charged now for quantity 1 (rest of the term)


async def book_for(session: AsyncSession, svc: Service) -> PriceBook | None:
    return (await load_pricebooks(session)).get(svc.product_kind)


async def ip_count(session: AsyncSession, svc: Service) -> int:
    return max(len(await services.service_ips(session, svc.service_id)), 1)


def require_active(svc: Service, now: datetime) -> None:
    status = services.effective_status(svc, now)
    if status != "active":
        raise Conflict(f"service {svc.service_id} is {status}; add-ons need an active service")


def parameters_for(book: PriceBook, kind: str, quantity: int, ips: int) -> dict[str, int | bool]:
    addon = book.addon(kind)
    if kind == "udp":
        return {"udp": True, "ip_count": ips}
    units = quantity * addon.unit_size
    return {"whitelist_slots": units} if kind == "extra_whitelist_slots" else {"connections": units}


async def active_addons(session: AsyncSession, service_id: uuid.UUID) -> list[ServiceAddon]:
    rows = await session.execute(
        select(ServiceAddon)
        .where(ServiceAddon.service_id == service_id, ServiceAddon.status == "active")
        .order_by(ServiceAddon.activated_at, ServiceAddon.addon_id)
    )
    return list(rows.scalars())


async def offers(
    session: AsyncSession, svc: Service, partner_percent: int, now: datetime | None = None
) -> list[Offer]:
    """Purchasable add-ons (kinds not active on the service) with today's price for quantity 1."""
    now = now or utcnow()
    book = await book_for(session, svc)
    if book is None or services.effective_status(svc, now) != "active":
        return []
    assert svc.current_period_start is not None and svc.current_period_end is not None
    active = {a.kind for a in await active_addons(session, svc.service_id)}
    ips = await ip_count(session, svc)
    out = []
    for addon in book.addons:
        if addon.kind in active:
            continue
        out.append(
            Offer(
                kind=addon.kind,
                per=addon.per,
                unit_size=addon.unit_size,
                monthly_cents=addon_monthly_cents(
                    book, addon.kind, ip_count=ips, partner_discount_percent=partner_percent
                ),
                price_cents=addon_charge_cents(
                    book,
                    addon.kind,
                    ip_count=ips,
                    period_months=svc.period_months,
                    period_start=svc.current_period_start,
                    period_end=svc.current_period_end,
                    at=now,
                    partner_discount_percent=partner_percent,
                ),
            )
        )
    return out


@dataclass(frozen=True)
class PriceGuard:
    """What the buyer accepts to pay: at most `max_total_cents`, and/or exactly `expected_cents` (the
    deprecated guard of buy_addon, issue 30.7)."""

    max_total_cents: int | None = None
    expected_cents: int | None = None

    def check(self, what: str, price: int) -> None:
        if self.max_total_cents is not None and price > self.max_total_cents:
            raise PriceChanged(
                f"the current price of {what} is {price} cents, more than max_total_cents="
                f"{self.max_total_cents}; nothing was charged. Retry with max_total_cents >= {price} to "
                "accept it",
                current_price_cents=price,
                max_total_cents=self.max_total_cents,
            )
        if self.expected_cents is not None and price != self.expected_cents:
            raise PriceChanged(
                f"the current price of {what} is {price} cents, not {self.expected_cents}; "
                "nothing was charged",
                current_price_cents=price,
                expected_price_cents=self.expected_cents,
            )


async def purchase(
    session: AsyncSession,
    svc: Service,
    kind: str,
    quantity: int,
    guard: PriceGuard,
    partner_percent: int,
    now: datetime | None = None,
) -> ServiceAddon:
    """Buy an add-on: 409 when the price is above the guard's `max_total_cents` (or differs from the
    deprecated `expected_cents`) or the kind is already active, 402 when the wallet is short; in every
    error case nothing is written (the caller's transaction rolls back)."""
    if guard.max_total_cents is None and guard.expected_cents is None:
        raise ValidationFailed(
            "max_total_cents is required: the most you accept to pay for this add-on, in cents "
            "(list_available_addons shows the price)",
            field="max_total_cents",
        )
    now = now or utcnow()
    require_active(svc, now)
    book = await book_for(session, svc)
    if book is None:
        raise ValidationFailed(f"no add-ons are sold for {svc.product_kind} services", field="addon_type")
    if kind == "udp" and quantity != 1:
        raise ValidationFailed("udp covers every IP of the service: quantity must be 1", field="quantity")
    assert svc.current_period_start is not None and svc.current_period_end is not None
    ips = await ip_count(session, svc)
    try:
        monthly = addon_monthly_cents(
            book, kind, ip_count=ips, quantity=quantity, partner_discount_percent=partner_percent
        )
        price = addon_charge_cents(
            book,
            kind,
            ip_count=ips,
            quantity=quantity,
            period_months=svc.period_months,
            period_start=svc.current_period_start,
            period_end=svc.current_period_end,
            at=now,
            partner_discount_percent=partner_percent,
        )
    except PricingError as exc:
        raise ValidationFailed(str(exc), field="addon_type") from None
    guard.check(f"{kind} x{quantity}", price)
    if kind in {a.kind for a in await active_addons(session, svc.service_id)}:
        raise Conflict(f"add-on {kind} is already active on service {svc.service_id}")
    service_id = svc.service_id
    addon = ServiceAddon(
        addon_id=uuid.uuid4(),
        service_id=service_id,
        customer_id=svc.customer_id,
        kind=kind,
        status="active",
        quantity=quantity,
        parameters=parameters_for(book, kind, quantity, ips),
        purchase_price_cents=price,
        monthly_cents=monthly,
        paid_cents=price,
        period_start=now,
        period_end=svc.current_period_end,
        activated_at=now,
        refunded_cents=0,
    )
    try:
        await addon_rows.add_addon(session, addon)
    except IntegrityError:  # a concurrent purchase of the same kind won (no attribute loads after this)
        raise Conflict(f"add-on {kind} is already active on service {service_id}") from None
    entry = None
    if price > 0:
        entry = await wallet.debit(
            session,
            svc.customer_id,
            price,
            "addon",
            f"Add-on {kind} for service #{svc.number}",
            service_id=svc.service_id,
        )
    invoice = await invoices.record_charge(
        session,
        svc.customer_id,
        kind="addon",
        description=f"Add-on {NAMES.get(kind, kind)}, service #{svc.number}",
        lines=[
            invoices.Line(
                f"{NAMES.get(kind, kind)} x{quantity}, until {svc.current_period_end:%Y-%m-%d} (prorated)",
                1,
                price,
                price,
            )
        ],
        service_id=svc.service_id,
        ledger_entries=[entry],
        now=now,
    )
    addon.invoice_id = invoice.id
    await session.flush()
    await service_events.addon_event(session, addon, "addon.activated", charged_cents=price)
    return addon


async def get_addon(session: AsyncSession, svc: Service, addon_id: uuid.UUID) -> ServiceAddon:
    addon = await session.get(ServiceAddon, addon_id)
    if addon is None or addon.service_id != svc.service_id:
        raise NotFound(f"add-on {addon_id} not found")
    return addon


def refund_for(addon: ServiceAddon, now: datetime) -> int:
    if addon.period_end <= addon.period_start:
        return 0
    return refund_unused(addon.paid_cents, addon.period_start, addon.period_end, now)


async def cancel(
    session: AsyncSession,
    addon: ServiceAddon,
    now: datetime | None = None,
    *,
    refund: bool = True,
    reason: str = "customer",
) -> int:
    """Cancel (idempotent): the transaction that moves it out of `active` refunds the unused time.
    Returns this call's refund."""
    now = now or utcnow()
    moved = await addon_rows.cancel(session, addon.addon_id, now)
    await session.refresh(addon)
    if not moved:
        return 0
    amount = refund_for(addon, now) if refund else 0
    if amount > 0:
        entry = await wallet.credit(
            session,
            addon.customer_id,
            amount,
            "refund",
            f"Refund of unused add-on {addon.kind}",
            service_id=addon.service_id,
        )
        await invoices.record_refund(
            session,
            addon.customer_id,
            addon.service_id,
            amount,
            f"Add-on {addon.kind} cancelled: unused time",
            invoice_id=addon.invoice_id,
            ledger_entry=entry,
            now=now,
        )
        addon.refunded_cents += amount
        await session.flush()
    removed = (
        await trim_whitelist(session, addon.service_id, now) if addon.kind == "extra_whitelist_slots" else []
    )
    await service_events.addon_event(
        session, addon, "addon.cancelled", refunded_cents=amount, reason=reason, removed_whitelist_ips=removed
    )
    return amount


async def trim_whitelist(session: AsyncSession, service_id: uuid.UUID, now: datetime) -> list[str]:
    """After slots went away: remove the newest whitelist entries beyond the limit (the oldest stay) and
    bump the gateway's change marker. Returns the removed IPs."""
    limit = (await entitlements(session, service_id)).whitelist_limit
    rows = (
        (
            await session.execute(
                select(ServiceWhitelist)
                .where(ServiceWhitelist.service_id == service_id)
                .order_by(ServiceWhitelist.id)
            )
        )
        .scalars()
        .all()
    )
    extra = list(rows[limit:])
    if not extra:
        return []
    await service_rows.drop_whitelist(session, service_id, [r.id for r in extra], now)
    return [r.ip for r in extra]


async def cancel_all(
    session: AsyncSession, service_id: uuid.UUID, now: datetime | None = None, *, refund: bool
) -> int:
    """End every active add-on of a service (service cancelled: refund; terminated: no refund)."""
    total = 0
    for addon in await active_addons(session, service_id):
        total += await cancel(
            session, addon, now, refund=refund, reason="service_cancelled" if refund else "service_ended"
        )
    return total


async def renewal_lines(
    session: AsyncSession, svc: Service, months: int, partner_percent: int
) -> list[tuple[ServiceAddon, invoices.Line]]:
    """What the active add-ons cost for `months` more at today's prices (no term discount)."""
    book = await book_for(session, svc)
    if book is None:
        return []
    ips = await ip_count(session, svc)
    out = []
    for addon in await active_addons(session, svc.service_id):
        try:
            monthly = addon_monthly_cents(
                book,
                addon.kind,
                ip_count=ips,
                quantity=addon.quantity,
                partner_discount_percent=partner_percent,
            )
        except PricingError:  # no longer sold: it ends with the term
            continue
        out.append(
            (
                addon,
                invoices.Line(
                    f"{NAMES.get(addon.kind, addon.kind)}, {months} month(s)",
                    months,
                    monthly,
                    monthly * months,
                ),
            )
        )
    return out


def extend(
    addon: ServiceAddon, line: invoices.Line, new_end: datetime, new_start: datetime | None = None
) -> None:
    """After a renewal paid `line`: the add-on now runs to `new_end` (from `new_start` after a resume)."""
    if new_start is not None:
        addon.period_start, addon.paid_cents = new_start, line.amount_cents
    else:
        addon.paid_cents += line.amount_cents
    addon.period_end = new_end
    addon.monthly_cents = line.unit_price_cents
