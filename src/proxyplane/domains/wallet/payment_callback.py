"""A payment processor's verified event on one deposit: a registered write served by the `processor` door
only (issue 20). The door is the processor's signed callback (adapters/rest/payments.py) and the built-in
test processor's checkout page, which sends the same signed callback (adapters/checkout/pages.py); both
parse and verify the callback, then invoke this through payment_events.process_event. The signature is its
authority, not an API key. Idempotent: only the transaction that moves the deposit out of `pending` credits
the wallet (deposits.apply_payment_event)."""

from __future__ import annotations

import uuid

from pydantic import BaseModel

from proxyplane.domains.services.service import ENTITLEMENTS_CHANGED
from proxyplane.domains.wallet.deposits import apply_payment_event
from proxyplane.ops import Auth, Context, Effect, Operation, register
from proxyplane.processors.base import PaymentEvent

PROCESSOR = frozenset({"processor"})


class PaymentEventIn(BaseModel):
    provider_ref: str
    outcome: str  # "paid" | "failed"
    amount_cents: int | None = None
    deposit_id: uuid.UUID | None = None


class PaymentEventResult(BaseModel):
    received: bool = True
    applied: bool
    error: str | None = None
    deposit_id: str | None = None
    status: str | None = None


async def apply_event(ctx: Context, data: PaymentEventIn) -> PaymentEventResult:
    event = PaymentEvent(data.provider_ref, data.outcome, data.amount_cents, data.deposit_id)
    try:
        deposit = await apply_payment_event(ctx.session, event)
    except ValueError as exc:  # raised before anything is written: the empty transaction commits nothing
        return PaymentEventResult(applied=False, error=str(exc))
    for service_id in ctx.uow.call.changed_services:  # the gateway's in-process fast path, after commit
        ctx.uow.after_commit(lambda sid=service_id: ctx.platform.emit(ENTITLEMENTS_CHANGED, sid))
    if deposit is None:
        return PaymentEventResult(applied=False, error="unknown deposit")
    return PaymentEventResult(applied=True, deposit_id=str(deposit.id), status=deposit.status)


PAYMENT_EVENT = Operation(
    name="payment_event",
    summary="payment processor: apply a verified callback event to its deposit",
    method="POST",
    path="/payments/{processor}/callback",
    handler=apply_event,
    input=PaymentEventIn,
    output=PaymentEventResult,
    # a paid order checkout credits the deposit and debits the order's remainder from the wallet in the same
    # transaction (the order was confirmed when it was placed; the event's signature is the authority)
    effect=Effect.SPENDS_MONEY,
    auth=Auth.NONE,
    mcp=False,
    doors=PROCESSOR,
)

register(PAYMENT_EVENT)
