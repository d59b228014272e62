"""Quotes and composite orders.

A quote and an order with the same input run the same code (`price`) and so cost the same. An order:
validate (422 before any charge) -> price -> create the pending service -> take the wallet part ->
allocate the IPs atomically -> either activate (fully paid) or open a processor checkout for
`amount_due_cents`; the service activates when that deposit is confirmed (see `settle_order_deposit`).
Everything happens in the caller's one transaction: an error anywhere rolls it all back.
"""

from __future__ import annotations

import ipaddress
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.core.errors import InsufficientBalance, ValidationFailed
from proxyplane.core.security import SecretBox
from proxyplane.domains.events import services as service_events
from proxyplane.domains.invoices import service as invoices
from proxyplane.domains.pricing import PricingError, Quote, merge_segments, order_minimum_error, quote_lines
from proxyplane.domains.pricing.store import load_pricebook
from proxyplane.domains.services import service as services
from proxyplane.domains.stock import service as stock
from proxyplane.domains.stock.countries import COUNTRIES
from proxyplane.domains.wallet import service as wallet
from proxyplane.storage.models import Deposit, Service, Wallet


@dataclass(frozen=True)
class SegmentError:
    country: str | None
    requested: int
    available: int
    message: str


@dataclass(frozen=True)
class Priced:
    quote: Quote
    errors: tuple[SegmentError, ...]
    availability: dict[str, int]
    included_connections_per_ip: int


async def price(
    session: AsyncSession,
    product_kind: str,
    geo_source: str,
    period_months: int,
    segments: Sequence[tuple[str, int]],
    partner_discount_percent: int = 0,
) -> Priced:
    """Price segments (merged per country, first appearance order) and list what cannot be fulfilled.
    Raises ValidationFailed for an unknown kind / geo source / period or an empty or malformed list."""
    stock.check_pool(product_kind, geo_source)
    book = await load_pricebook(session, product_kind)
    try:
        merged = merge_segments([(c.strip().upper(), n) for c, n in segments])
        quote = quote_lines(book, merged, period_months, partner_discount_percent)
    except PricingError as exc:
        field = "period_months" if "period" in str(exc) else "segments"
        raise ValidationFailed(str(exc), field=field) from None
    avail = await stock.availability(session, product_kind, geo_source)
    errors = []
    for seg in merged:
        have = avail.get(seg.country, 0)
        if seg.country not in COUNTRIES:
            errors.append(SegmentError(seg.country, seg.count, 0, f"unknown country code {seg.country!r}"))
        elif have < seg.count:
            errors.append(
                SegmentError(
                    seg.country,
                    seg.count,
                    have,
                    f"only {have} {product_kind} IPs available in {seg.country} ({geo_source})",
                )
            )
    minimum = order_minimum_error(book, quote)
    if minimum:
        errors.append(SegmentError(None, quote.ip_count, 0, minimum))
    return Priced(quote, tuple(errors), avail, book.included_connections_per_ip)


def check_whitelist(ips: Sequence[str] | None) -> list[str]:
    """Single IPv4 addresses only (no CIDR, no IPv6), at least one; normalised, de-duplicated."""
    if not ips:
        raise ValidationFailed("whitelist_ips must list at least one IPv4 address", field="whitelist_ips")
    out: list[str] = []
    for raw in ips:
        text = raw.strip()
        if "/" in text:
            raise ValidationFailed(
                f"whitelist entry {raw!r} is a subnet; only single IPv4 addresses are allowed",
                field="whitelist_ips",
            )
        try:
            addr = ipaddress.IPv4Address(text)
        except ValueError:
            raise ValidationFailed(
                f"whitelist entry {raw!r} is not an IPv4 address", field="whitelist_ips"
            ) from None
        if str(addr) not in out:
            out.append(str(addr))
    return out


async def _lock_balance(session: AsyncSession, customer_id: int, postgres: bool) -> int:
    q = select(Wallet.balance_cents).where(Wallet.customer_id == customer_id)
    if postgres:
        q = q.with_for_update()
    return int((await session.scalar(q)) or 0)


@dataclass(frozen=True)
class OrderResult:
    service: Service
    priced: Priced
    wallet_paid_cents: int
    amount_due_cents: int
    deposit: Deposit | None


async def place_order(
    session: AsyncSession,
    box: SecretBox,
    processor: object,
    *,
    customer_id: int,
    partner_discount_percent: int,
    product_kind: str,
    geo_source: str,
    period_months: int,
    segments: Sequence[tuple[str, int]],
    whitelist_ips: Sequence[str] | None,
    use_balance: bool,
    payment_method: str,
    idempotency_key: str,
    postgres: bool,
    balance_only: bool = False,
) -> OrderResult:
    """`balance_only` (agents over MCP): a balance short of the total raises InsufficientBalance before
    anything is created, reserved or charged, and no processor checkout is ever opened."""
    wl = check_whitelist(whitelist_ips)
    await services.expire_due(session)  # free the IPs of services whose term is over
    priced = await price(session, product_kind, geo_source, period_months, segments, partner_discount_percent)
    if priced.errors:
        first = priced.errors[0]
        raise stock.OutOfStock(
            first.message,
            errors=[e.__dict__ for e in priced.errors],
        )
    quote = priced.quote
    total = quote.total_cents
    if balance_only:
        have = await _lock_balance(session, customer_id, postgres)
        if have < total:
            raise InsufficientBalance(
                f"the wallet balance is {total - have} cents short of this order ({total} cents, balance "
                f"{have}) and agents pay from the balance only; nothing was charged or reserved",
                required_cents=total,
                balance_cents=have,
                missing_cents=total - have,
            )
    svc = await services.create_service(
        session,
        box,
        customer_id=customer_id,
        product_kind=product_kind,
        period_months=period_months,
        geo_source=geo_source,
        segments=[(line.country, line.count) for line in quote.lines],
        whitelist=wl,
        renewal_price_cents=quote.monthly_cents,
        period_price_cents=total,
        max_connections=priced.included_connections_per_ip * quote.ip_count,
    )
    wallet_part = min(await _lock_balance(session, customer_id, postgres), total) if use_balance else 0
    if wallet_part > 0:
        await wallet.debit(
            session,
            customer_id,
            wallet_part,
            "purchase",
            f"Order #{svc.number}: {quote.ip_count} {product_kind} IPs, {period_months} month(s)",
            service_id=svc.service_id,
        )
    svc.wallet_paid_cents = wallet_part
    await stock.allocate(
        session,
        svc.service_id,
        product_kind,
        geo_source,
        [(line.country, line.count) for line in quote.lines],
        postgres=postgres,
    )
    due = total - wallet_part
    deposit = None
    if due == 0:
        services.activate(svc)
    else:
        from proxyplane.domains.wallet.deposits import init_deposit

        deposit = await init_deposit(
            session,
            processor,  # type: ignore[arg-type]
            customer_id,
            due,
            payment_method,
            f"order:{svc.service_id}:{idempotency_key}"[:200],
        )
        svc.deposit_id = deposit.id
        svc.amount_due_cents = due
    await session.flush()
    await invoices.record_order(session, svc, quote, wallet_part, due, payment_method, svc.deposit_id)
    await service_events.order_placed(session, svc, due)
    return OrderResult(svc, priced, wallet_part, due, deposit)


async def settle_order_deposit(session: AsyncSession, deposit: Deposit) -> uuid.UUID | None:
    """Deposit-settlement hook: the deposit of an order's remainder was confirmed or failed.

    paid: the deposit has just been credited to the wallet; take `amount_due_cents` from it and
    activate the service (if it is still pending; a service cancelled meanwhile leaves the money in the
    wallet). failed: refund the wallet part, release the IPs, cancel the order. Returns the service id
    whose entitlements changed, if any."""
    svc = (
        await session.execute(select(Service).where(Service.deposit_id == deposit.id))
    ).scalar_one_or_none()
    if svc is None or svc.status != "pending":
        return None
    if deposit.status == "paid":
        await wallet.debit(
            session,
            svc.customer_id,
            svc.amount_due_cents,
            "purchase",
            f"Order #{svc.number}: paid at checkout",
            service_id=svc.service_id,
        )
        svc.wallet_paid_cents += svc.amount_due_cents
        services.activate(svc)
        await session.flush()
        await service_events.order_paid(session, svc)
        return svc.service_id
    await services.cancel(session, svc)
    return svc.service_id
