"""Top-ups: open a checkout, and credit the wallet exactly once when the processor confirms."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.core.call import call_context
from proxyplane.core.clock import utcnow
from proxyplane.core.errors import KycRequired, NotFound, ValidationFailed
from proxyplane.domains.accounts.service import get_customer
from proxyplane.domains.events.wallet import deposit_failed
from proxyplane.domains.wallet import service as wallet
from proxyplane.processors.base import PaymentEvent, PaymentProcessor
from proxyplane.storage.models import Deposit
from proxyplane.storage.repos import deposits as deposit_rows

# Extension point: other domains react to a deposit leaving `pending` (e.g. an order's checkout).
# A hook runs in the same transaction, only in the one that moved the deposit, after the wallet credit.
# It may return a service id whose entitlements changed; those are collected in
# the call's context (core/call.py, `changed_services`) for the caller to signal after commit.
SettlementHook = Callable[[AsyncSession, Deposit], Awaitable[Any]]
SETTLEMENT_HOOKS: list[SettlementHook] = []


def on_deposit_settled(hook: SettlementHook) -> SettlementHook:
    if hook not in SETTLEMENT_HOOKS:
        SETTLEMENT_HOOKS.append(hook)
    return hook


def find_method(processor: PaymentProcessor, method: str) -> tuple[str, bool]:
    for m in processor.methods():
        if m.id == method:
            return m.id, m.kyc_required
    known = ", ".join(m.id for m in processor.methods())
    raise ValidationFailed(f"unknown payment method {method!r}; available: {known}", field="payment_method")


async def init_deposit(
    session: AsyncSession,
    processor: PaymentProcessor,
    customer_id: int,
    amount_cents: int,
    method: str,
    idempotency_key: str,
) -> Deposit:
    method, kyc = find_method(processor, method)
    customer = await get_customer(session, customer_id)
    if kyc and customer.kyc_verified_at is None:
        raise KycRequired(f"payment method {method!r} requires identity verification (KYC) to be completed")
    existing = (
        await session.execute(
            select(Deposit).where(
                Deposit.customer_id == customer_id, Deposit.idempotency_key == idempotency_key
            )
        )
    ).scalar_one_or_none()
    if existing is not None:
        return existing
    deposit = Deposit(
        id=uuid.uuid4(),
        customer_id=customer_id,
        amount_cents=amount_cents,
        payment_method=method,
        processor=processor.name,
        idempotency_key=idempotency_key,
    )
    checkout = await processor.create_checkout(
        deposit.id, amount_cents, method, customer.email, idempotency_key
    )
    deposit.checkout_url = checkout.url
    deposit.provider_ref = checkout.provider_ref
    await deposit_rows.add_deposit(session, deposit)
    return deposit


async def get_deposit(session: AsyncSession, customer_id: int, deposit_id: uuid.UUID) -> Deposit:
    deposit = await session.get(Deposit, deposit_id)
    if deposit is None or deposit.customer_id != customer_id:
        raise NotFound(f"deposit {deposit_id} not found")
    return deposit


async def apply_payment_event(session: AsyncSession, event: PaymentEvent) -> Deposit | None:
    """Apply a verified processor event. Idempotent and safe under concurrent repeats: only the
    transaction whose conditional UPDATE moves the deposit out of `pending` credits the wallet."""
    deposit = (
        await session.execute(select(Deposit).where(Deposit.provider_ref == event.provider_ref))
    ).scalar_one_or_none()
    if deposit is None:
        return None
    if (
        event.amount_cents is not None
        and event.amount_cents != deposit.amount_cents
        and event.outcome == "paid"
    ):
        raise ValueError(
            f"paid amount {event.amount_cents} differs from the deposit's {deposit.amount_cents}"
        )
    new_status = "paid" if event.outcome == "paid" else "failed"
    # An order's checkout that expired unpaid (orders/expiry.py) can still be paid late: the money is
    # credited to the wallet (the cancelled order is not revived); a late failure changes nothing.
    movable = ("pending", "expired") if new_status == "paid" else ("pending",)
    moved = await deposit_rows.move_status(session, deposit.id, movable, new_status, utcnow())
    if moved and new_status == "paid":
        await wallet.credit(
            session,
            deposit.customer_id,
            deposit.amount_cents,
            "deposit",
            f"Top-up via {deposit.payment_method} ({deposit.processor})",
            deposit_id=deposit.id,
        )
    if moved and new_status == "failed":
        await deposit_failed(session, deposit)
    await session.refresh(deposit)
    if moved:
        for hook in SETTLEMENT_HOOKS:
            changed = await hook(session, deposit)
            if changed is not None:
                call_context(session).changed_services.append(changed)
    return deposit
