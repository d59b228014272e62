"""Stripe: Checkout Sessions for top-ups; the wallet is credited from the signed webhook
(`checkout.session.completed` with payment_status=paid, or `checkout.session.async_payment_succeeded`)."""

from __future__ import annotations

import uuid
from typing import Any

import stripe

from proxyplane.core.settings import Settings
from proxyplane.processors.base import Checkout, PaymentEvent, PaymentMethod

PAID_EVENTS = {"checkout.session.completed", "checkout.session.async_payment_succeeded"}
FAILED_EVENTS = {"checkout.session.async_payment_failed", "checkout.session.expired"}


class StripeProcessor:
    name = "stripe"

    def __init__(self, settings: Settings, http_client: Any = None) -> None:
        self.settings = settings
        self.webhook_secret = settings.stripe_webhook_secret
        kwargs: dict[str, Any] = {"max_network_retries": 2}
        if http_client is not None:
            kwargs["http_client"] = http_client
        self.client = stripe.StripeClient(settings.stripe_secret_key or "sk_test_unset", **kwargs)

    def methods(self) -> list[PaymentMethod]:
        kyc = self.settings.kyc_methods()
        return [PaymentMethod("card", "Card (Stripe Checkout)", "card" in kyc)]

    async def create_checkout(
        self, deposit_id: uuid.UUID, amount_cents: int, method: str, customer_email: str, idempotency_key: str
    ) -> Checkout:
        base = self.settings.base_url()
        session = await self.client.v1.checkout.sessions.create_async(
            params={
                "mode": "payment",
                "line_items": [
                    {
                        "price_data": {
                            "currency": "usd",
                            "unit_amount": amount_cents,
                            "product_data": {"name": "Wallet top-up"},
                        },
                        "quantity": 1,
                    }
                ],
                "customer_email": customer_email,
                "client_reference_id": str(deposit_id),
                "metadata": {"deposit_id": str(deposit_id)},
                "success_url": f"{base}/wallet?deposit={deposit_id}",
                "cancel_url": f"{base}/wallet?deposit={deposit_id}&cancelled=1",
            },
            options={"idempotency_key": f"deposit-{deposit_id}"},
        )
        return Checkout(url=str(session.url), provider_ref=str(session.id))

    def parse_callback(self, body: bytes, headers: dict[str, str]) -> PaymentEvent | None:
        sig = {k.lower(): v for k, v in headers.items()}.get("stripe-signature", "")
        try:
            event = stripe.Webhook.construct_event(body.decode(), sig, self.webhook_secret)
        except (stripe.SignatureVerificationError, ValueError) as exc:
            raise ValueError(f"stripe signature check failed: {exc}") from exc
        obj = event.data.object.to_dict()
        if event.type == "checkout.session.completed" and obj.get("payment_status") != "paid":
            return None  # async methods: wait for async_payment_succeeded
        if event.type in PAID_EVENTS:
            outcome = "paid"
        elif event.type in FAILED_EVENTS:
            outcome = "failed"
        else:
            return None
        return PaymentEvent(
            provider_ref=str(obj["id"]), outcome=outcome, amount_cents=obj.get("amount_total")
        )
