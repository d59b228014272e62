"""Apply a payment processor's verified event through the registered operation `payment_event` (the
`processor` door; domains/wallet/payment_callback.py): `invoke` owns the transaction. Shared by the REST
payment callback and the test processor's checkout page, which send the same signed callback, so neither
adapter imports the other."""

from __future__ import annotations

from proxyplane.domains.wallet.payment_callback import PAYMENT_EVENT, PaymentEventIn, PaymentEventResult
from proxyplane.ops import Caller, invoke
from proxyplane.platform import Platform
from proxyplane.processors.base import PaymentEvent


async def process_event(platform: Platform, event: PaymentEvent) -> dict[str, object]:
    data = PaymentEventIn(
        provider_ref=event.provider_ref,
        outcome=event.outcome,
        amount_cents=event.amount_cents,
        deposit_id=event.deposit_id,
    )
    result: PaymentEventResult = await invoke(
        platform, PAYMENT_EVENT, Caller.anonymous(channel="processor"), data
    )
    return result.model_dump(exclude_none=True)
