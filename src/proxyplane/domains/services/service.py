"""Services: creation with credentials, activation, renewal, cancellation with pro-rata refund, expiry,
and the lookups the gateway and the legacy API use.

States (v1):
    pending   -- ordered, IPs reserved, part of the price still due at a processor checkout
    active    -- paid; served by the gateway until current_period_end
    suspended -- stopped by the operator (not served; IPs kept)
    expired   -- the term ended without renewal (IPs released; not served)
    cancelled -- cancelled by the customer, or its checkout failed (IPs released; not served)
Transitions: pending -> active (checkout paid) | cancelled (checkout failed, or customer cancel: the
wallet part is refunded in full); active -> expired (term end) | cancelled (refund of unused time) |
suspended; suspended -> active | cancelled. expired and cancelled are final.
"""

from __future__ import annotations

import calendar
import secrets
import string
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.core.clock import utcnow
from proxyplane.core.errors import Conflict, NotFound
from proxyplane.core.security import SecretBox, mask
from proxyplane.domains.events import services as service_events
from proxyplane.domains.pricing.money import percent_of
from proxyplane.domains.pricing.proration import refund_unused
from proxyplane.domains.stock import service as stock
from proxyplane.domains.wallet import service as wallet
from proxyplane.storage import paging
from proxyplane.storage.models import LedgerEntry, Service, ServiceIp, ServiceWhitelist
from proxyplane.storage.models.prefixes import ServiceSubnet
from proxyplane.storage.repos import services as service_rows

SERVED_STATUSES = ("active",)
PERIODS = (1, 3, 6, 12)
ENTITLEMENTS_CHANGED = "entitlements_changed"


def add_months(moment: datetime, months: int) -> datetime:
    """Same day-of-month `months` later, clamped to the month's last day (Jan 31 + 1 = Feb 28/29)."""
    month0 = moment.month - 1 + months
    year, month = moment.year + month0 // 12, month0 % 12 + 1
    day = min(moment.day, calendar.monthrange(year, month)[1])
    return moment.replace(year=year, month=month, day=day)


def new_login() -> str:
    return "pp" + secrets.token_hex(5)


_ALPHABET = string.ascii_letters + string.digits  # 62 characters


def new_password(length: int = 16) -> str:
    """`length` characters drawn uniformly from letters and digits: random bytes below 248 (4 x 62) taken
    modulo 62, the others dropped (one token_bytes call, not one secrets.choice per character)."""
    out: list[str] = []
    while len(out) < length:
        out += [_ALPHABET[b % 62] for b in secrets.token_bytes(2 * length) if b < 248]
    return "".join(out[:length])


def effective_status(service: Service, now: datetime | None = None) -> str:
    """The status as the gateway must see it: an active service past its term is expired even before
    the expiry job has marked it."""
    now = now or utcnow()
    if (
        service.status == "active"
        and service.current_period_end is not None
        and service.current_period_end <= now
    ):
        return "expired"
    return service.status


def is_served(service: Service, now: datetime | None = None) -> bool:
    return effective_status(service, now) in SERVED_STATUSES


async def create_service(
    session: AsyncSession,
    box: SecretBox,
    *,
    customer_id: int,
    product_kind: str,
    period_months: int,
    geo_source: str = "maxmind",
    segments: Sequence[tuple[str, int]] = (),
    whitelist: Sequence[str] = (),
    renewal_price_cents: int = 0,
    period_price_cents: int = 0,
    max_connections: int = 100,
    product_id: uuid.UUID | None = None,
    parameters: dict | None = None,  # type: ignore[type-arg]
    purchase_key: str | None = None,
) -> Service:
    svc = Service(
        service_id=uuid.uuid4(),
        customer_id=customer_id,
        product_kind=product_kind,
        product_id=product_id,
        status="pending",
        period_months=period_months,
        geo_source=geo_source,
        segments=[{"country": c, "count": n} for c, n in segments],
        parameters=parameters or {},
        purchase_key=purchase_key,
        auto_renew=False,
        renewal_price_cents=renewal_price_cents,
        period_price_cents=period_price_cents,
        wallet_paid_cents=0,
        amount_due_cents=0,
        login=new_login(),
        password_enc=box.encrypt(new_password()),
        max_connections=max_connections,
    )
    await service_rows.add_service(session, svc, whitelist)
    return svc


def activate(service: Service, now: datetime | None = None) -> None:
    now = now or utcnow()
    service.status = "active"
    service.started_at = service.started_at or now
    service.current_period_start = now
    service.current_period_end = add_months(now, service.period_months)
    service.amount_due_cents = 0


# --- lookups (REST, gateway, legacy) ------------------------------------------------------------


async def get_owned(session: AsyncSession, customer_id: int, service_id: uuid.UUID) -> Service:
    """The customer's service, or NotFound (also for other customers' services)."""
    svc = (
        await session.execute(select(Service).where(Service.service_id == service_id))
    ).scalar_one_or_none()
    if svc is None or svc.customer_id != customer_id:
        raise NotFound(f"service {service_id} not found")
    return svc


async def get_by_service_id(session: AsyncSession, service_id: uuid.UUID) -> Service | None:
    return (
        await session.execute(select(Service).where(Service.service_id == service_id))
    ).scalar_one_or_none()


async def get_by_number(session: AsyncSession, number: int) -> Service | None:
    """Legacy numeric id -> service."""
    return await session.get(Service, number)


async def get_by_login(session: AsyncSession, login: str) -> Service | None:
    return (await session.execute(select(Service).where(Service.login == login))).scalar_one_or_none()


async def list_for_customer(
    session: AsyncSession, customer_id: int, offset: int, limit: int
) -> tuple[list[Service], int]:
    return await paging.page(
        session, Service, Service.number, [Service.customer_id == customer_id], offset, limit
    )


async def service_ips(session: AsyncSession, service_id: uuid.UUID) -> list[ServiceIp]:
    """Live IP allocations (address, port, country) of a service, in allocation order. A service with no
    IP rows may hold IPv6 subnets (issue 16): those come back as unsaved ServiceIp rows whose address is
    the subnet (CIDR) and ip_id the prefix id."""
    rows = await session.execute(
        select(ServiceIp)
        .where(ServiceIp.service_id == service_id, ServiceIp.released_at.is_(None))
        .order_by(ServiceIp.id)
    )
    found = list(rows.scalars())
    if found:
        return found
    return (await subnet_rows(session, [service_id])).get(service_id, [])


async def subnet_rows(
    session: AsyncSession, service_ids: list[uuid.UUID]
) -> dict[uuid.UUID, list[ServiceIp]]:
    """Live IPv6 subnets of services as unsaved ServiceIp rows (address = the subnet CIDR), one statement."""
    out: dict[uuid.UUID, list[ServiceIp]] = {}
    rows = await session.execute(
        select(ServiceSubnet)
        .where(ServiceSubnet.service_id.in_(service_ids), ServiceSubnet.released_at.is_(None))
        .order_by(ServiceSubnet.id)
    )
    for sub in rows.scalars():
        out.setdefault(sub.service_id, []).append(
            ServiceIp(
                service_id=sub.service_id,
                ip_id=sub.prefix_id,
                address=sub.subnet,
                port=None,
                country=sub.country,
                allocated_at=sub.allocated_at,
            )
        )
    return out


async def page_details(
    session: AsyncSession, service_ids: list[uuid.UUID]
) -> tuple[dict[uuid.UUID, list[ServiceIp]], dict[uuid.UUID, list[str]]]:
    """Live IPs and whitelists of a page of services in two statements, whatever the page's size (a list
    page used to read both per service)."""
    ips: dict[uuid.UUID, list[ServiceIp]] = {sid: [] for sid in service_ids}
    allowed: dict[uuid.UUID, list[str]] = {sid: [] for sid in service_ids}
    if not service_ids:
        return ips, allowed
    rows = await session.execute(
        select(ServiceIp)
        .where(ServiceIp.service_id.in_(service_ids), ServiceIp.released_at.is_(None))
        .order_by(ServiceIp.id)
    )
    for ip in rows.scalars():
        ips[ip.service_id].append(ip)
    empty = [sid for sid, held in ips.items() if not held]
    if empty:  # IPv6 services hold subnets (issue 16)
        ips.update(await subnet_rows(session, empty))
    listed = await session.execute(
        select(ServiceWhitelist.service_id, ServiceWhitelist.ip)
        .where(ServiceWhitelist.service_id.in_(service_ids))
        .order_by(ServiceWhitelist.id)
    )
    for sid, address in listed.all():
        allowed[sid].append(address)
    return ips, allowed


async def whitelist(session: AsyncSession, service_id: uuid.UUID) -> list[str]:
    rows = await session.execute(
        select(ServiceWhitelist.ip)
        .where(ServiceWhitelist.service_id == service_id)
        .order_by(ServiceWhitelist.id)
    )
    return list(rows.scalars())


def reveal_password(box: SecretBox, service: Service) -> str:
    return box.decrypt(service.password_enc)


def masked_password(box: SecretBox, service: Service) -> str:
    return mask(reveal_password(box, service))


@dataclass(frozen=True)
class Entitlements:
    """Everything the gateway needs to serve one service."""

    service_id: uuid.UUID
    number: int
    customer_id: int
    product_kind: str
    status: str  # effective status
    login: str
    password: str
    whitelist: tuple[str, ...]
    ips: tuple[tuple[str, int | None, str], ...]  # (address, port, country)
    max_connections: int
    current_period_end: datetime | None
    parameters: dict  # type: ignore[type-arg]


async def entitlements(session: AsyncSession, box: SecretBox, service: Service) -> Entitlements:
    return Entitlements(
        service_id=service.service_id,
        number=service.number,
        customer_id=service.customer_id,
        product_kind=service.product_kind,
        status=effective_status(service),
        login=service.login,
        password=reveal_password(box, service),
        whitelist=tuple(await whitelist(session, service.service_id)),
        ips=tuple((i.address, i.port, i.country) for i in await service_ips(session, service.service_id)),
        max_connections=service.max_connections,
        current_period_end=service.current_period_end,
        parameters=dict(service.parameters or {}),
    )


async def refunded_cents(session: AsyncSession, service_id: uuid.UUID) -> int:
    total = await session.scalar(
        select(func.coalesce(func.sum(LedgerEntry.amount_cents), 0)).where(
            LedgerEntry.service_id == service_id, LedgerEntry.kind == "refund"
        )
    )
    return int(total or 0)


# --- lifecycle ------------------------------------------------------------------------------------


def renewal_charge_cents(monthly_cents: int, months: int, term_percent: int) -> int:
    """Same rule as a quote line: monthly * months minus the term discount (rounded half up once)."""
    gross = monthly_cents * months
    return gross - percent_of(gross, term_percent)


async def renew(
    session: AsyncSession, service: Service, months: int, term_percent: int, now: datetime | None = None
) -> int:
    """Charge the wallet for `months` more and extend the term from its current end. Returns the charge."""
    now = now or utcnow()
    status = effective_status(service, now)
    if status not in ("active", "suspended"):
        raise Conflict(f"service {service.service_id} is {status}; only an active service can be renewed")
    assert service.current_period_end is not None
    charge = renewal_charge_cents(service.renewal_price_cents, months, term_percent)
    if charge > 0:
        await wallet.debit(
            session,
            service.customer_id,
            charge,
            "renewal",
            f"Renewal of service #{service.number} for {months} month(s)",
            service_id=service.service_id,
        )
    service.current_period_end = add_months(service.current_period_end, months)
    service.period_price_cents += charge
    await session.flush()
    await service_events.service_event(
        session, service, "service.renewed", months=months, charged_cents=charge
    )
    return charge


def cancel_refund_cents(service: Service, now: datetime) -> int:
    """What cancelling at `now` refunds: for an active (or suspended) service the unused part of the paid
    term (pricing.refund_unused over [current_period_start, current_period_end]); for a pending one the
    wallet part in full; nothing otherwise."""
    if service.status == "pending":
        return service.wallet_paid_cents
    if service.status in ("active", "suspended") and effective_status(service, now) != "expired":
        assert service.current_period_start is not None and service.current_period_end is not None
        return refund_unused(
            service.period_price_cents, service.current_period_start, service.current_period_end, now
        )
    return 0


async def cancel(session: AsyncSession, service: Service, now: datetime | None = None) -> int:
    """Terminate at once (idempotent), refund unused paid time to the wallet, free the IPs.
    Returns the refund of this call (0 when it was already cancelled)."""
    now = now or utcnow()
    live = ("pending", "active", "suspended")
    if not await service_rows.move_status(
        session, service.number, live, "cancelled", cancelled_at=now, purchase_key=None
    ):
        await session.refresh(service)
        return 0
    refund = cancel_refund_cents(service, now)
    await session.refresh(service)
    if refund > 0:
        await wallet.credit(
            session,
            service.customer_id,
            refund,
            "refund",
            f"Refund of unused time, service #{service.number}",
            service_id=service.service_id,
        )
    await stock.release(session, service.service_id, service.product_kind)
    await service_events.service_event(session, service, "service.cancelled", refund_cents=refund)
    return refund


async def expire_due(session: AsyncSession, now: datetime | None = None) -> list[uuid.UUID]:
    """Mark active services past their term as expired and free their IPs (the expiry job). Services
    with auto_renew on are left to domains/renewals (renew, or suspend with a grace period)."""
    now = now or utcnow()
    due = (
        (
            await session.execute(
                select(Service).where(
                    Service.status == "active",
                    Service.current_period_end <= now,
                    Service.auto_renew.is_(False),  # auto-renewing ones: the renewal job (suspend, grace)
                )
            )
        )
        .scalars()
        .all()
    )
    ids = []
    for svc in due:
        if await service_rows.move_status(session, svc.number, "active", "expired", purchase_key=None):
            await stock.release(session, svc.service_id, svc.product_kind)
            await session.refresh(svc)
            await service_events.service_event(session, svc, "service.expired")
            ids.append(svc.service_id)
    return ids
