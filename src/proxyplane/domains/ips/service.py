"""Growing and refreshing a service's IP list: add IPs mid-term (prorated), and IP refresh (free once per
configured interval, otherwise paid).

Both take IPs with the same conditional UPDATE as orders (`assigned_count < capacity`, never oversold)
and never hand a service an IP it holds or has ever held (so a refresh always brings new addresses).
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.core.clock import utcnow
from proxyplane.core.errors import Conflict, ValidationFailed
from proxyplane.domains.events import services as service_events
from proxyplane.domains.invoices import service as invoices
from proxyplane.domains.orders import places
from proxyplane.domains.pricing import AddIpsQuote, PriceBook, PricingError, merge_segments, quote_add_ips
from proxyplane.domains.pricing import refresh_price_cents as refresh_price
from proxyplane.domains.pricing.store import load_pricebooks
from proxyplane.domains.services import service as services
from proxyplane.domains.stock import service as stock
from proxyplane.domains.stock import subnets
from proxyplane.domains.stock.allocate import Allocated
from proxyplane.domains.stock.countries import COUNTRIES
from proxyplane.domains.stock.service import SOLD_KINDS
from proxyplane.domains.wallet import service as wallet
from proxyplane.storage.models import Service, ServiceIp, StockIp
from proxyplane.storage.models.billing import ServiceRefresh
from proxyplane.storage.models.prefixes import IPV6_KIND
from proxyplane.storage.repos import refreshes as refresh_rows
from proxyplane.storage.repos import services as service_rows
from proxyplane.storage.repos import stock as stock_rows


def _country_col(geo_source: str):  # type: ignore[no-untyped-def]
    return StockIp.country_ripe if geo_source == "ripe" else StockIp.country_maxmind


async def book_for(session: AsyncSession, svc: Service) -> PriceBook:
    book = (await load_pricebooks(session)).get(svc.product_kind)
    if book is None or svc.product_kind not in SOLD_KINDS:
        raise ValidationFailed(
            f"{svc.product_kind} services have no IP list to grow or refresh", field="service_id"
        )
    return book


def require_active(svc: Service, now: datetime) -> None:
    status = services.effective_status(svc, now)
    if status != "active":
        raise Conflict(f"service {svc.service_id} is {status}; this needs an active service")


async def held_ip_ids(session: AsyncSession, service_id: uuid.UUID) -> set[int]:
    """Every stock IP the service holds or has held."""
    rows = await session.execute(select(ServiceIp.ip_id).where(ServiceIp.service_id == service_id))
    return set(rows.scalars())


async def available(session: AsyncSession, svc: Service, held: set[int]) -> dict[str, int]:
    """{country: IPs this service could still get} (free capacity, not held by it). IPv4: the pool's
    maintained free counts (O(1) in the stock's size) less the service's own IPs that are still free
    (O(its IPs)). IPv6: free subnets (the allocation skips the ones the service holds or held)."""
    if svc.product_kind == IPV6_KIND:
        return await subnets.availability(session, svc.geo_source)
    counts = await stock.availability(session, svc.product_kind, svc.geo_source)
    if held:
        col = _country_col(svc.geo_source)
        own_free = (
            select(col, func.count())
            .where(
                StockIp.id.in_(held),
                StockIp.product_kind == svc.product_kind,
                StockIp.retired_at.is_(None),
                StockIp.assigned_count < StockIp.capacity,
            )
            .group_by(col)
        )
        for country, n in (await session.execute(own_free)).all():
            if country in counts:
                counts[country] -= int(n)
    return {c: n for c, n in counts.items() if n > 0}


async def allocate(
    session: AsyncSession,
    svc: Service,
    segments: Sequence[tuple[str, int]],
    held: set[int],
) -> list[Allocated]:
    """Take `count` new IPs per country for the service (never one in `held`) or raise OutOfStock."""
    return await stock.allocate(
        session,
        svc.service_id,
        svc.product_kind,
        svc.geo_source,
        sorted(segments),
        exclude=held,
    )


# --- add IPs --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AddQuote:
    quote: AddIpsQuote
    added: list[tuple[str, int]]
    current_renewal_monthly_cents: int
    new_renewal_monthly_cents: int
    new_renewal_price_cents: int  # what the next renewal of period_months will charge
    errors: list[dict[str, object]]
    term_end: datetime


def _normalise(segments: Sequence[tuple[str, int]]) -> list[tuple[str, int]]:
    try:
        return [(s.country, s.count) for s in merge_segments([(c.strip().upper(), n) for c, n in segments])]
    except PricingError as exc:
        raise ValidationFailed(str(exc), field="segments") from None


async def quote_add(
    session: AsyncSession, svc: Service, segments: Sequence[tuple[str, int]], partner: int, now: datetime
) -> AddQuote:
    require_active(svc, now)
    book = await book_for(session, svc)
    added = _normalise(segments)
    assert svc.current_period_start is not None and svc.current_period_end is not None
    existing = [places.stored_segment(s) for s in svc.segments or []]  # a bought city stays the city's
    try:
        q = quote_add_ips(
            book,
            existing,
            added,
            svc.period_months,
            svc.current_period_start,
            svc.current_period_end,
            now,
            partner,
        )
    except PricingError as exc:
        raise ValidationFailed(str(exc), field="segments") from None
    avail = await available(session, svc, await held_ip_ids(session, svc.service_id))
    errors: list[dict[str, object]] = []
    unit = "subnets" if svc.product_kind == IPV6_KIND else "IPs"  # an IPv6 service grows by whole subnets
    for country, count in added:
        have = avail.get(country, 0)
        if country not in COUNTRIES:
            errors.append(
                {"country": country, "requested": count, "available": 0, "message": "unknown country"}
            )
        elif have < count:
            errors.append(
                {
                    "country": country,
                    "requested": count,
                    "available": have,
                    "message": f"only {have} new {svc.product_kind} {unit} available in {country}",
                }
            )
    percent = book.term_discount_percent(svc.period_months)
    return AddQuote(
        quote=q,
        added=added,
        current_renewal_monthly_cents=svc.renewal_price_cents,
        new_renewal_monthly_cents=q.renewal.monthly_cents,
        new_renewal_price_cents=services.renewal_charge_cents(
            q.renewal.monthly_cents, svc.period_months, percent
        ),
        errors=errors,
        term_end=svc.current_period_end,
    )


async def add_ips(
    session: AsyncSession,
    svc: Service,
    segments: Sequence[tuple[str, int]],
    partner: int,
    *,
    now: datetime | None = None,
) -> tuple[AddQuote, list[Allocated], int | None]:
    """Charge exactly the quote's prorated amount, allocate the IPs, raise the renewal price."""
    now = now or utcnow()
    aq = await quote_add(session, svc, segments, partner, now)
    if aq.errors:
        raise stock.OutOfStock(str(aq.errors[0]["message"]), errors=aq.errors)
    book = await book_for(session, svc)
    new_ips = await allocate(session, svc, aq.added, await held_ip_ids(session, svc.service_id))
    charge = aq.quote.charge_cents
    entry = None
    if charge > 0:
        entry = await wallet.debit(
            session,
            svc.customer_id,
            charge,
            "add_ips",
            f"{len(new_ips)} IPs added to service #{svc.number}",
            service_id=svc.service_id,
        )
    svc.segments = [places.segment_record(line) for line in aq.quote.renewal.lines]
    svc.renewal_price_cents = aq.new_renewal_monthly_cents
    svc.period_price_cents += charge
    svc.max_connections += book.included_connections_per_ip * len(new_ips)
    lines = [
        invoices.Line(
            f"{line.count} {svc.product_kind} IPs in {line.country}, {svc.period_months} month(s)",
            line.count,
            line.unit_price_cents,
            line.total_cents,
        )
        for line in aq.quote.added.lines
    ]
    unused = aq.quote.added.total_cents - charge
    if unused:
        lines.append(
            invoices.Line(f"Proration: term already used (until {aq.term_end:%Y-%m-%d})", 1, -unused, -unused)
        )
    invoice = await invoices.record_charge(
        session,
        svc.customer_id,
        kind="add_ips",
        description=f"IPs added to service #{svc.number}",
        lines=lines,
        service_id=svc.service_id,
        ledger_entries=[entry],
        now=now,
    )
    await session.flush()
    await service_events.service_event(
        session,
        svc,
        "service.ips_added",
        ips=[{"ip": row.address, "port": row.port, "country": row.country} for row in new_ips],
        ip_count=len(await services.service_ips(session, svc.service_id)),
        charged_cents=charge,
        invoice_id=str(invoice.id),
    )
    return aq, new_ips, invoice.id


# --- refresh --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RefreshStatus:
    free: bool
    interval_days: int
    window: int | None
    next_free_at: datetime | None
    price_per_ip_cents: int
    full_price_cents: int  # paid refresh of every IP
    ip_count: int
    last_refresh_at: datetime | None


async def refresh_status(session: AsyncSession, svc: Service, partner: int, now: datetime) -> RefreshStatus:
    book = await book_for(session, svc)
    ips = await services.service_ips(session, svc.service_id)
    days = book.free_refresh_interval_days
    last = await session.scalar(
        select(func.max(ServiceRefresh.created_at)).where(ServiceRefresh.service_id == svc.service_id)
    )
    window = next_free = None
    free = False
    if days > 0 and svc.started_at is not None:
        span = timedelta(days=days)
        window = max((now - svc.started_at) // span, 0)
        used = await session.scalar(
            select(func.count()).where(
                ServiceRefresh.service_id == svc.service_id, ServiceRefresh.free_window == window
            )
        )
        free = not used
        next_free = now if free else svc.started_at + span * (window + 1)
    return RefreshStatus(
        free=free,
        interval_days=days,
        window=window,
        next_free_at=next_free,
        price_per_ip_cents=refresh_price(book, 1, partner),
        full_price_cents=refresh_price(book, len(ips), partner) if ips else 0,
        ip_count=len(ips),
        last_refresh_at=last,
    )


@dataclass(frozen=True)
class RefreshResult:
    kind: str  # free | paid
    charged_cents: int
    replaced: list[dict[str, str]]  # {old, new, country}
    invoice_id: int | None


async def refresh(
    session: AsyncSession,
    svc: Service,
    target_ips: Sequence[str] | None,
    partner: int,
    *,
    can_spend: bool,
    now: datetime | None = None,
) -> RefreshResult:
    """Replace the whole list (no targets) or only `target_ips` with new IPs of the same countries and geo
    source. Free when the current window's free refresh is unused; otherwise charged (needs can_spend)."""
    from proxyplane.core.errors import MissingScope

    now = now or utcnow()
    require_active(svc, now)
    # concurrent refreshes of one service take turns: each reads the list the previous one left
    await service_rows.lock_service(session, svc.number)
    book = await book_for(session, svc)
    live = await services.service_ips(session, svc.service_id)
    if target_ips:
        by_addr = {row.address: row for row in live}
        unknown = [ip for ip in dict.fromkeys(t.strip() for t in target_ips) if ip not in by_addr]
        if unknown:
            raise ValidationFailed(
                f"not IPs of this service: {', '.join(unknown)}", field="target_ips", unknown_ips=unknown
            )
        old = [by_addr[ip] for ip in dict.fromkeys(t.strip() for t in target_ips)]
    else:
        old = live
    if not old:
        raise ValidationFailed("the service has no IPs to refresh", field="target_ips")
    status = await refresh_status(session, svc, partner, now)
    charge = 0 if status.free else refresh_price(book, len(old), partner)
    if charge > 0 and not can_spend:
        raise MissingScope(
            f"this refresh is off-cycle and costs {charge} cents: the key needs wallet:spend",
            missing_scopes=["wallet:spend"],
            price_cents=charge,
        )
    try:
        record = await refresh_rows.add_refresh(
            session, svc.service_id, status.free, status.window if status.free else None, charge, now
        )
    except IntegrityError:
        raise Conflict("another refresh of this service used the free refresh; retry") from None
    counts = Counter(row.country for row in old)
    held = await held_ip_ids(session, svc.service_id)
    new_rows = await allocate(session, svc, sorted(counts.items()), held)
    if svc.product_kind == IPV6_KIND:  # old subnets go back to the prefix (reused before its cursor moves)
        await subnets.release(session, svc.service_id, {o.address for o in old})
    else:
        await stock_rows.release_rows(session, old, now)
    pool: dict[str, list[Allocated]] = {}
    for row in new_rows:
        pool.setdefault(row.country, []).append(row)
    replaced = [{"old": o.address, "new": pool[o.country].pop(0).address, "country": o.country} for o in old]
    entry = None
    if charge > 0:
        entry = await wallet.debit(
            session,
            svc.customer_id,
            charge,
            "refresh",
            f"IP refresh of service #{svc.number}",
            service_id=svc.service_id,
        )
    invoice_id = None
    if charge > 0:
        invoice = await invoices.record_charge(
            session,
            svc.customer_id,
            kind="refresh",
            description=f"Off-cycle IP refresh, service #{svc.number}",
            lines=[
                invoices.Line(f"IP refresh ({len(old)} IPs)", len(old), status.price_per_ip_cents, charge)
            ],
            service_id=svc.service_id,
            ledger_entries=[entry],
            now=now,
        )
        invoice_id = invoice.id
    record.replaced = replaced
    record.invoice_id = invoice_id
    await session.flush()
    await service_events.service_event(
        session,
        svc,
        "service.ips_replaced",
        refresh_kind=record.kind,
        old_ips=[r["old"] for r in replaced],
        new_ips=[r["new"] for r in replaced],
        replaced=replaced,
        charged_cents=charge,
        invoice_id=str(invoice_id) if invoice_id is not None else None,
    )
    return RefreshResult(record.kind, charge, replaced, invoice_id)
