"""The built-in test payment processor (the embedded default).

Its checkout is a page served by the platform (`/checkout/test/{deposit_id}`) where the payer confirms
or declines; the decision reaches the platform as a callback signed with HMAC-SHA256 over
`<timestamp>.<body>` (header `X-Testpay-Signature: t=<ts>,v1=<hex>`), exactly as an external processor
would send it, to `POST /api/v1/payments/test/callback`."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
import uuid

from proxyplane.processors.base import Checkout, PaymentEvent, PaymentMethod

SIGNATURE_HEADER = "x-testpay-signature"
TOLERANCE_SECONDS = 300


class TestProcessor:
    name = "test"
    __test__ = False  # not a pytest class

    def __init__(self, base_url: str, secret_key: str, kyc_methods: frozenset[str]) -> None:
        self.base_url = base_url.rstrip("/")
        self._key = hashlib.sha256(b"testpay:" + secret_key.encode()).hexdigest()
        self.kyc_methods = kyc_methods

    def methods(self) -> list[PaymentMethod]:
        return [
            PaymentMethod("card", "Card (test checkout)", "card" in self.kyc_methods),
            PaymentMethod("crypto", "Crypto (test checkout)", "crypto" in self.kyc_methods),
            PaymentMethod(
                "bank_transfer", "Bank transfer (test checkout)", "bank_transfer" in self.kyc_methods
            ),
        ]

    async def create_checkout(
        self, deposit_id: uuid.UUID, amount_cents: int, method: str, customer_email: str, idempotency_key: str
    ) -> Checkout:
        token = self.page_token(deposit_id)
        return Checkout(
            url=f"{self.base_url}/checkout/test/{deposit_id}?token={token}",
            provider_ref=f"testpay_{deposit_id.hex}",
        )

    def page_token(self, deposit_id: uuid.UUID) -> str:
        return hmac.new(self._key.encode(), b"page:" + deposit_id.bytes, hashlib.sha256).hexdigest()[:32]

    def check_page_token(self, deposit_id: uuid.UUID, token: str) -> bool:
        return hmac.compare_digest(self.page_token(deposit_id), token)

    def signed_callback(
        self, deposit_id: uuid.UUID, outcome: str, amount_cents: int, timestamp: int | None = None
    ) -> tuple[bytes, dict[str, str]]:
        """What the processor sends when the payer decides: the body and its signature header."""
        body = json.dumps(
            {
                "type": "payment.succeeded" if outcome == "paid" else "payment.failed",
                "deposit_id": str(deposit_id),
                "provider_ref": f"testpay_{deposit_id.hex}",
                "amount_cents": amount_cents,
            },
            sort_keys=True,
        ).encode()
        ts = int(time.time()) if timestamp is None else timestamp
        sig = hmac.new(self._key.encode(), f"{ts}.".encode() + body, hashlib.sha256).hexdigest()
        return body, {SIGNATURE_HEADER: f"t={ts},v1={sig}"}

    def parse_callback(self, body: bytes, headers: dict[str, str]) -> PaymentEvent | None:
        header = {k.lower(): v for k, v in headers.items()}.get(SIGNATURE_HEADER, "")
        parts = dict(p.split("=", 1) for p in header.split(",") if "=" in p)
        try:
            ts = int(parts.get("t", ""))
        except ValueError as exc:
            raise ValueError("missing or malformed signature header") from exc
        if abs(time.time() - ts) > TOLERANCE_SECONDS:
            raise ValueError("callback timestamp outside the tolerance window")
        expected = hmac.new(self._key.encode(), f"{ts}.".encode() + body, hashlib.sha256).hexdigest()
        if not hmac.compare_digest(expected, parts.get("v1", "")):
            raise ValueError("signature does not match")
        try:
            data = json.loads(body)
            kind = data["type"]
            event = PaymentEvent(
                provider_ref=str(data["provider_ref"]),
                outcome="paid" if kind == "payment.succeeded" else "failed",
                amount_cents=int(data["amount_cents"]),
                deposit_id=uuid.UUID(data["deposit_id"]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError("malformed callback body") from exc
        if kind not in ("payment.succeeded", "payment.failed"):
            return None
        return event
