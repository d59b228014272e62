"""Quotes and composite orders.

Pricing is in quoting.py (a quote and an order with the same input price the same). An order:
validate (422 before any charge: whitelist, minimum, countries) -> take the wallet part -> create the
service (active when fully paid) -> allocate every IP in one set-based statement -> invoice, ledger entry,
events; or, with a remainder, a pending service and a processor checkout for `amount_due_cents` that
activates it when confirmed (see `settle_order_deposit`). Everything happens in the caller's one
transaction: an error anywhere rolls it all back. The statement count does not depend on the IP count.
On PostgreSQL an order the wallet pays in full writes everything in one statement after its context
read and savepoint (paid_in_full.py); the other paths merge what they can (rows.py).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.core.call import call_context
from proxyplane.core.clock import utcnow
from proxyplane.core.errors import InsufficientBalance, ValidationFailed
from proxyplane.core.security import SecretBox
from proxyplane.domains.events import services as service_events
from proxyplane.domains.orders import context as order_context
from proxyplane.domains.orders import paid_in_full, places, rows
from proxyplane.domains.orders.quoting import Priced as Priced
from proxyplane.domains.orders.quoting import SegmentError as SegmentError
from proxyplane.domains.orders.quoting import check_whitelist as check_whitelist
from proxyplane.domains.orders.quoting import price as price
from proxyplane.domains.orders.quoting import quote_segments
from proxyplane.domains.pricing import (
    PriceBook,
    Quote,
    Segment,
    order_minimum,
)
from proxyplane.domains.services import service as services
from proxyplane.domains.stock import allocate as alloc
from proxyplane.domains.stock import service as stock
from proxyplane.domains.stock.allocate import Allocated
from proxyplane.domains.stock.countries import COUNTRIES
from proxyplane.domains.wallet import service as wallet
from proxyplane.storage.models import Deposit, Service, Wallet
from proxyplane.storage.models.prefixes import IPV6_KIND
from proxyplane.storage.repos import orders as order_statements
from proxyplane.storage.repos import savepoints
from proxyplane.storage.repos import services as service_rows

PLACE_SAVEPOINT = "order_place"


class OrderBelowMinimum(ValidationFailed):
    """An order under the price book's minimum: names the minimum and the order's own amount."""

    code = "order_below_minimum"


@dataclass(frozen=True)
class OrderResult:
    service: Service
    priced: Priced
    wallet_paid_cents: int
    amount_due_cents: int
    deposit: Deposit | None
    ips: tuple[Allocated, ...] = ()
    whitelist: tuple[str, ...] = ()
    password: str | None = None  # the service's proxy password in plain (only the order has it at hand)


def _check_order(book: PriceBook, quote: Quote, product_kind: str, geo_source: str) -> None:
    """The refusals that need no stock count: unknown countries, then the order minimum."""
    unknown = [line for line in quote.lines if line.country not in COUNTRIES]
    if unknown:
        errors = [
            SegmentError(line.country, line.count, 0, f"unknown country code {line.country!r}")
            for line in unknown
        ]
        raise stock.OutOfStock(errors[0].message, errors=[e.__dict__ for e in errors])
    below = order_minimum(book, quote)
    if below is not None:
        raise OrderBelowMinimum(
            below.message,
            minimum_ips=below.minimum_ips,
            minimum_monthly_cents=below.minimum_monthly_cents,
            ip_count=below.ip_count,
            monthly_cents=below.monthly_cents,
        )


def _out_of_stock(
    product_kind: str,
    geo_source: str,
    quote: Quote,
    wants: Sequence[alloc.Want],
    missing: Sequence[alloc.Want],
) -> stock.OutOfStock:
    short = {(c, p): n for c, n, p in missing}
    errors = []
    for line, (country, count, place) in zip(quote.lines, wants, strict=True):
        if (country, place) not in short:
            continue
        have = count - short[(country, place)]
        where = places.place_text(line) if place is not None else country
        errors.append(
            SegmentError(
                country,
                count,
                have,
                f"only {have} {product_kind} IPs available in {where} ({geo_source})",
                "insufficient_stock",
                region=line.region,
                city=line.city,
            )
        )
    return stock.OutOfStock(errors[0].message, errors=[e.__dict__ for e in errors])


def _new_service(
    box: SecretBox, customer_id: int, quote: Quote, geo_source: str, included: int, password: str
) -> Service:
    """The order's service row as a transient Service (never added to the session: storage/repos/
    services.py writes it), every column given, set in its __dict__ as the ORM's loading does (no
    per-attribute events)."""
    now = utcnow()
    svc: Service = _NEW_SERVICE()
    svc.__dict__.update(
        service_id=uuid.uuid4(),
        customer_id=customer_id,
        product_kind=quote.product_kind,
        product_id=None,
        status="pending",
        period_months=quote.period_months,
        geo_source=geo_source,
        segments=[places.segment_record(line) for line in quote.lines],
        parameters={},
        purchase_key=None,
        started_at=None,
        current_period_start=None,
        current_period_end=None,
        auto_renew=False,
        renewal_price_cents=quote.monthly_cents,
        period_price_cents=quote.total_cents,
        wallet_paid_cents=0,
        amount_due_cents=0,
        deposit_id=None,
        login=services.new_login(),
        password_enc=box.encrypt(password),
        max_connections=included * quote.ip_count,
        cancelled_at=None,
        created_at=now,
        updated_at=now,
    )
    return svc


_NEW_SERVICE = Service.__mapper__.class_manager.new_instance  # an instance with its state, no __init__


def _settle(svc: Service, paid: int) -> None:
    svc.wallet_paid_cents = paid
    if paid == svc.period_price_cents:
        services.activate(svc)
    else:
        svc.amount_due_cents = svc.period_price_cents - paid


async def _from_wallet(
    session: AsyncSession, customer_id: int, total: int, use_balance: bool, balance_only: bool
) -> wallet.Withdrawal | None:
    if total <= 0:
        return None
    if not use_balance:
        if balance_only:  # everything would go to a checkout, which agents never get: refuse now
            have = int(
                (await session.scalar(select(Wallet.balance_cents).where(Wallet.customer_id == customer_id)))
                or 0
            )
            if have < total:
                raise InsufficientBalance(
                    f"the wallet balance is {total - have} cents short of this order ({total} cents, "
                    f"balance {have}) and agents pay from the balance only; nothing was charged or reserved",
                    required_cents=total,
                    balance_cents=have,
                    missing_cents=total - have,
                )
        return None
    try:
        return await wallet.withdraw(session, customer_id, total, up_to=not balance_only)
    except InsufficientBalance as exc:
        have = int(exc.extra.get("balance_cents", 0))
        raise InsufficientBalance(
            f"the wallet balance is {total - have} cents short of this order ({total} cents, balance "
            f"{have}) and agents pay from the balance only; nothing was charged or reserved",
            required_cents=total,
            balance_cents=have,
            missing_cents=total - have,
        ) from None


async def place_order(
    session: AsyncSession,
    box: SecretBox,
    processor: object,
    *,
    customer_id: int,
    product_kind: str,
    geo_source: str,
    period_months: int,
    segments: Sequence[tuple[str, int] | Segment],
    whitelist_ips: Sequence[str] | None,
    use_balance: bool,
    payment_method: str,
    idempotency_key: str,
    partner_discount_percent: int | None = None,
    balance_only: bool = False,
) -> OrderResult:
    """One order in a bounded number of statements whatever its IP count: one context read, the wallet
    part (one guarded UPDATE), the service row, its whitelist, the IPs (allocate.take: one statement on
    PostgreSQL, two on SQLite), the invoice and its lines, the ledger entry, the events.
    `partner_discount_percent` None: the customer's own. `balance_only` (agents over MCP): a balance
    short of the total raises InsufficientBalance and nothing is created, reserved or charged, and no
    processor checkout is ever opened."""
    wl = check_whitelist(whitelist_ips)
    stock.check_pool(product_kind, geo_source)
    ctx = await order_context.load(session, customer_id, product_kind, call_context(session).spending_key)
    partner = ctx.partner_discount_percent if partner_discount_percent is None else partner_discount_percent
    quote = quote_segments(ctx.book, segments, period_months, partner)
    _check_order(ctx.book, quote, product_kind, geo_source)
    lines = [(line.country, line.count) for line in quote.lines]
    place_of = await places.resolve(session, product_kind, geo_source, quote.lines)  # {} unless placed
    wants = [(c, n, place_of[i].filter if i in place_of else None) for i, (c, n) in enumerate(lines)]
    total = quote.total_cents
    included = ctx.book.included_connections_per_ip
    password = services.new_password()  # kept in plain for the response: no decrypt of what was encrypted
    taken: wallet.Withdrawal | None = None
    ips: list[Allocated] | None = None
    recorded = False  # the invoice, ledger entry and events already written (paid_in_full)
    in_full = use_balance and 0 < total <= ctx.balance_cents and product_kind != IPV6_KIND
    in_full = in_full and order_statements.available(session) and not place_of  # the lean PG statement
    held_elsewhere = alloc.skips_held_rows(session)  # a take may come back short while others hold stock
    if held_elsewhere and not in_full:
        await savepoints.open_savepoint(session, PLACE_SAVEPOINT)
    elif in_full:  # paid in full as the context read saw the balance: one statement (paid_in_full.py)
        svc = _new_service(box, customer_id, quote, geo_source, included, password)
        _settle(svc, total)
        # the invoice, ledger entry, events and deliveries in the same statement unless the key's
        # spending cap is to be counted first
        with_records = not ctx.capped_key
        placed = await paid_in_full.place(
            session,
            svc,
            wl,
            total,
            geo_source,
            lines,
            record=(quote, ctx.balance_low_threshold_cents) if with_records else None,
            deliveries=ctx.has_webhooks,
            savepoint=PLACE_SAVEPOINT,  # opened by place, with its generic plan setting: one round trip
        )
        if placed is None:  # a concurrent debit came first: nothing written, back to the general path
            await savepoints.rollback_to(session, PLACE_SAVEPOINT)
        else:
            taken, ips = wallet.Withdrawal(total, placed[0]), placed[1]
            recorded = with_records and not alloc.shortfall(lines, ips)
    if ips is None:
        taken = await _from_wallet(session, customer_id, total, use_balance, balance_only)
        svc = _new_service(box, customer_id, quote, geo_source, included, password)
        _settle(svc, taken.cents if taken else 0)
        await service_rows.insert_service(session, svc, wl)
        ips, missing = await alloc.take_wants(session, svc.service_id, product_kind, geo_source, wants)
    else:
        missing = [(c, n, None) for c, n in alloc.shortfall(lines, ips)]
    if missing and held_elsewhere:
        # rows with room held by concurrent orders (or no stock): start again from the savepoint, this
        # time stock first (waiting in id order), then the wallet, so no two orders wait in a cycle
        await savepoints.rollback_to(session, PLACE_SAVEPOINT)
        await services.expire_due(session)
        svc = _new_service(box, customer_id, quote, geo_source, included, password)
        await service_rows.insert_service(session, svc, wl)
        ips, missing = await alloc.take_wants_waiting(
            session, svc.service_id, product_kind, geo_source, wants
        )
        if missing:
            raise _out_of_stock(product_kind, geo_source, quote, wants, missing)
        taken = await _from_wallet(session, customer_id, total, use_balance, balance_only)
        _settle(svc, taken.cents if taken else 0)
        await service_rows.update_service(session, svc, *_SETTLED)
    elif missing:  # SQLite (one writer): free the IPs of services whose term is over, then try again
        await services.expire_due(session)
        more, missing = await alloc.take_wants_waiting(
            session,
            svc.service_id,
            product_kind,
            geo_source,
            missing,
            exclude={a.ip_id for a in ips},
        )
        if missing:
            raise _out_of_stock(product_kind, geo_source, quote, wants, missing)
        ips = sorted([*ips, *more], key=lambda a: a.ip_id)
    paid = taken.cents if taken else 0
    due = total - paid
    deposit = None
    if due > 0:
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
        await service_rows.update_service(session, svc, "deposit_id")
    if not recorded:  # (recorded: the statement wrote them, and the repository counted the debit)
        await rows.record(session, ctx, svc, quote, taken, due, payment_method)
    availability: dict[str, int] = {}
    for country, count in lines:  # the order took them all
        availability[country] = availability.get(country, 0) + count
    priced = Priced(quote, (), availability, included, {i: lines[i][1] for i in place_of})
    return OrderResult(svc, priced, paid, due, deposit, tuple(ips), tuple(wl), password)


# what _settle may change on a service row already written (the waiting path settles after the stock)
_SETTLED = (
    "wallet_paid_cents",
    "amount_due_cents",
    "status",
    "started_at",
    "current_period_start",
    "current_period_end",
)


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
