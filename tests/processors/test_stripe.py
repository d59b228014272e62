"""Stripe processor, offline: Checkout Session creation through an injected HTTP client that records the
request (no network here), and webhooks signed with Stripe's own test helper."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Mapping
from typing import Any

import httpx
import pytest
import stripe

from proxyplane.core.settings import Settings
from proxyplane.domains.wallet import deposits
from proxyplane.platform import Platform
from proxyplane.processors.stripe import StripeProcessor
from tests.support import Account, bearer

pytestmark = pytest.mark.anyio
WEBHOOK_SECRET = "whsec_test_secret"


class RecordingStripeHttp(stripe.HTTPClient):
    """Answers Stripe API calls like the API would for a new Checkout Session, and keeps each request."""

    name = "recording"

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[dict[str, Any]] = []

    def _answer(
        self, method: str, url: str, headers: Mapping[str, str], post_data: Any
    ) -> tuple[bytes, int, Any]:
        self.calls.append({"method": method, "url": url, "headers": dict(headers), "body": post_data})
        session_id = f"cs_test_{uuid.uuid4().hex}"
        body = {
            "id": session_id,
            "object": "checkout.session",
            "url": f"https://checkout.stripe.test/{session_id}",
            "payment_status": "unpaid",
            "status": "open",
        }
        return json.dumps(body).encode(), 200, {}

    def request(self, method, url, headers, post_data=None):  # type: ignore[override]
        return self._answer(method, url, headers, post_data)

    async def request_async(self, method, url, headers, post_data=None):  # type: ignore[override]
        return self._answer(method, url, headers, post_data)

    def close(self) -> None:
        pass

    async def close_async(self) -> None:
        pass


@pytest.fixture
def stripe_platform(platform: Platform) -> tuple[Platform, RecordingStripeHttp]:
    settings = platform.settings.model_copy(
        update={
            "payment_processor": "stripe",
            "stripe_secret_key": "sk_test_123",
            "stripe_webhook_secret": WEBHOOK_SECRET,
        }
    )
    platform.settings = settings
    http = RecordingStripeHttp()
    platform.processors["stripe"] = StripeProcessor(settings, http_client=http)
    return platform, http


def signed(event: dict[str, Any], secret: str = WEBHOOK_SECRET) -> tuple[bytes, dict[str, str]]:
    payload = json.dumps(event)
    header = stripe.WebhookSignature.generate_signature_header(payload, secret)
    return payload.encode(), {"Stripe-Signature": header, "Content-Type": "application/json"}


def completed_event(
    session_id: str, amount: int, payment_status: str = "paid", kind: str = "checkout.session.completed"
) -> dict[str, Any]:
    return {
        "id": f"evt_{uuid.uuid4().hex}",
        "object": "event",
        "type": kind,
        "created": int(time.time()),
        "data": {
            "object": {
                "id": session_id,
                "object": "checkout.session",
                "amount_total": amount,
                "payment_status": payment_status,
            }
        },
    }


async def test_checkout_session_and_paid_webhook(
    client: httpx.AsyncClient, stripe_platform: tuple[Platform, RecordingStripeHttp], account: Account
) -> None:
    platform, http = stripe_platform
    key = await account.key()
    r = await client.post(
        "/api/v1/customer/wallet/deposit/init",
        headers=bearer(key),
        json={"amount_cents": 2500, "payment_method": "card", "idempotency_key": "s1"},
    )
    assert r.status_code == 200, r.text
    dep = r.json()
    session_id = dep["checkout_url"].rsplit("/", 1)[1]
    assert dep["processor"] == "stripe" and session_id.startswith("cs_test_")
    call = http.calls[0]
    assert call["url"].endswith("/v1/checkout/sessions") and call["method"] == "post"
    assert call["headers"]["Idempotency-Key"] == f"deposit-{dep['deposit_id']}"
    assert "[unit_amount]=2500" in call["body"] and "mode=payment" in call["body"]
    # an async payment method: completed but unpaid credits nothing
    body, headers = signed(completed_event(session_id, 2500, payment_status="unpaid"))
    assert (
        await client.post("/api/v1/payments/stripe/callback", content=body, headers=headers)
    ).status_code == 200
    assert (await client.get("/api/v1/customer/wallet/balance", headers=bearer(key))).json()[
        "balance_cents"
    ] == 0
    body, headers = signed(completed_event(session_id, 2500, kind="checkout.session.async_payment_succeeded"))
    for _ in range(2):
        assert (
            await client.post("/api/v1/payments/stripe/callback", content=body, headers=headers)
        ).status_code == 200
    assert (await client.get("/api/v1/customer/wallet/balance", headers=bearer(key))).json()[
        "balance_cents"
    ] == 2500


async def test_bad_stripe_signature_refused(
    client: httpx.AsyncClient, stripe_platform: tuple[Platform, RecordingStripeHttp], account: Account
) -> None:
    key = await account.key()
    await client.post(
        "/api/v1/customer/wallet/deposit/init",
        headers=bearer(key),
        json={"amount_cents": 2500, "payment_method": "card", "idempotency_key": "s2"},
    )
    body, headers = signed(completed_event("cs_test_1", 2500), secret="whsec_wrong")
    r = await client.post("/api/v1/payments/stripe/callback", content=body, headers=headers)
    assert r.status_code == 400
    assert (await client.get("/api/v1/customer/wallet/balance", headers=bearer(key))).json()[
        "balance_cents"
    ] == 0


async def test_unknown_session_applies_nothing(stripe_platform: tuple[Platform, RecordingStripeHttp]) -> None:
    platform, _ = stripe_platform
    event = platform.processor().parse_callback(*signed(completed_event("cs_unknown", 100)))
    async with platform.db.unit_of_work() as uow:
        assert await deposits.apply_payment_event(uow.session, event) is None


def test_settings_select_stripe() -> None:
    p = Platform(
        Settings(
            payment_processor="stripe",
            secret_key="x",
            stripe_webhook_secret=WEBHOOK_SECRET,
            database_url="sqlite+aiosqlite:///:memory:",
        )
    )
    assert isinstance(p.processor(), StripeProcessor)
    assert [m.id for m in p.processor().methods()] == ["card"]
