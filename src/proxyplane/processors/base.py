"""The payment processor interface: a checkout for a top-up; the wallet is credited only when the
processor confirms (a verified callback), never when the checkout is opened."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class PaymentMethod:
    id: str
    name: str
    kyc_required: bool


@dataclass(frozen=True)
class Checkout:
    url: str
    provider_ref: str


@dataclass(frozen=True)
class PaymentEvent:
    """A processor's verified word on one deposit."""

    provider_ref: str
    outcome: str  # "paid" | "failed"
    amount_cents: int | None = None
    deposit_id: uuid.UUID | None = None


class PaymentProcessor(Protocol):
    name: str

    def methods(self) -> list[PaymentMethod]: ...

    async def create_checkout(
        self, deposit_id: uuid.UUID, amount_cents: int, method: str, customer_email: str, idempotency_key: str
    ) -> Checkout: ...

    def parse_callback(self, body: bytes, headers: dict[str, str]) -> PaymentEvent | None:
        """Verify the signature and return the event, or raise ValueError for a forged/garbled callback;
        None for an event type that does not concern deposits."""
        ...
