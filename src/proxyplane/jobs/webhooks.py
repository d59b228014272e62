"""The webhook outbox worker.

Claim: one statement (storage/repos/webhook_deliveries.py: `UPDATE webhook_deliveries SET status='sending',
lease ... WHERE id IN (SELECT id ... FOR UPDATE SKIP LOCKED) RETURNING ...`). Only the head of each
endpoint's queue is claimable, which keeps per-endpoint order. The claim commits before the HTTP call;
the result is written in a second short transaction, only if the lease is still ours. A crashed worker's
lease expires and the row is claimed again: delivery is at-least-once, with a stable webhook-id for
de-duplication."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import random
import socket
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import httpx
from sqlalchemy import select
from standardwebhooks import Webhook

from proxyplane.core.clock import as_utc, utcnow
from proxyplane.core.settings import Settings
from proxyplane.domains.events.service import emit
from proxyplane.domains.tickets import service as tickets
from proxyplane.domains.webhooks import service as hooks
from proxyplane.domains.webhooks import targets
from proxyplane.observability import metrics
from proxyplane.platform import Platform
from proxyplane.storage.models import Event, WebhookDelivery, WebhookEndpoint
from proxyplane.storage.repos import webhook_deliveries

log = logging.getLogger("proxyplane.webhooks")
BODY_LIMIT = 1000
USER_AGENT = "ProxyPlane-Webhooks/1"


@dataclass
class Outcome:
    ok: bool
    status: int | None = None
    body: str | None = None
    error: str | None = None


def backoff(settings: Settings, attempts: int) -> float:
    """Seconds before the next try: exponential, capped, with +-20% jitter."""
    base = settings.webhook_retry_base_seconds * (2.0 ** max(0, attempts - 1))
    return min(settings.webhook_retry_max_seconds, base) * random.uniform(0.8, 1.2)


def sign(secrets: list[str], msg_id: str, body: str, now: datetime) -> str:
    """One `v1,<sig>` per active secret (two during a rotation), space separated, signed now (UTC)."""
    return " ".join(Webhook(s).sign(msg_id=msg_id, timestamp=now, data=body) for s in secrets)


class WebhookWorker:
    def __init__(self, platform: Platform, name: str | None = None) -> None:
        self.platform = platform
        self.settings = platform.settings
        self.name = name or f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        self.client = httpx.AsyncClient(
            timeout=httpx.Timeout(self.settings.webhook_timeout_seconds),
            follow_redirects=False,
            trust_env=False,
            # no connection reuse: connections are opened to a checked IP with the endpoint's SNI
            limits=httpx.Limits(max_keepalive_connections=0),
        )

    async def close(self) -> None:
        await self.client.aclose()

    async def run_once(self, limit: int = 20) -> int:
        """Claim due deliveries (at most one per endpoint) and attempt them; returns how many."""
        batch = await self.claim(limit)
        await asyncio.gather(*(self.attempt(delivery_id) for delivery_id in batch))
        return len(batch)

    async def run_forever(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            try:
                done = await self.run_once()
            except Exception:  # keep the worker alive; the lease brings rows back
                log.exception("webhook worker pass failed")
                done = 0
            if done == 0:
                try:
                    await asyncio.wait_for(stop.wait(), self.settings.worker_poll_seconds)
                except TimeoutError:
                    pass

    async def claim(self, limit: int) -> list[int]:
        now = utcnow()
        lease = timedelta(seconds=self.settings.webhook_timeout_seconds + 30)
        async with self.platform.db.unit_of_work(write=True) as uow:
            ids = await webhook_deliveries.claim_due(uow.session, limit, now, now + lease, self.name)
            await uow.commit()
        return sorted(ids)

    async def attempt(self, delivery_id: int) -> None:
        async with self.platform.db.unit_of_work(write=False) as uow:
            row = (
                await uow.session.execute(
                    select(WebhookDelivery, WebhookEndpoint, Event)
                    .join(WebhookEndpoint, WebhookEndpoint.id == WebhookDelivery.endpoint_id)
                    .join(Event, Event.id == WebhookDelivery.event_id)
                    .where(WebhookDelivery.id == delivery_id)
                )
            ).first()
        if row is None:  # endpoint deleted meanwhile
            return
        delivery, endpoint, event = row
        try:
            outcome = await self.send(endpoint, event)
        except Exception as exc:  # never leave a claimed row without a result
            log.exception("webhook delivery %s failed unexpectedly", delivery_id)
            outcome = Outcome(ok=False, error=f"internal error: {type(exc).__name__}")
        await self.finish(delivery, endpoint.id, outcome)
        gave_up = delivery.attempts >= self.settings.webhook_max_attempts
        result = "succeeded" if outcome.ok else "failed" if gave_up else "retry"
        metrics.webhook_attempt(result, (utcnow() - as_utc(event.created_at)).total_seconds())

    async def send(self, endpoint: WebhookEndpoint, event: Event) -> Outcome:
        try:
            target = await targets.resolve(endpoint.url, self.settings.webhooks_allow_http_loopback)
        except targets.TargetRefused as exc:
            return Outcome(ok=False, error=f"refused: {exc}"[:500])
        body = json.dumps(hooks.payload(event), separators=(",", ":"))
        msg_id = hooks.webhook_id(event.id)
        now = utcnow()
        headers = {
            "content-type": "application/json",
            "user-agent": USER_AGENT,
            "host": target.host_header,
            "webhook-id": msg_id,
            "webhook-timestamp": str(int(now.timestamp())),
            "webhook-signature": sign(
                hooks.signing_secrets(self.platform.secrets, endpoint, now), msg_id, body, now
            ),
        }
        extensions: dict[str, Any] = {}
        if target.scheme == "https" and target.host not in target.addresses:
            extensions["sni_hostname"] = target.host
        try:
            async with self.client.stream(
                "POST", target.pinned_url(endpoint.url), content=body, headers=headers, extensions=extensions
            ) as response:
                raw = b""
                async for chunk in response.aiter_bytes():
                    raw += chunk
                    if len(raw) >= BODY_LIMIT * 4:
                        break
                text = raw.decode("utf-8", "replace")[:BODY_LIMIT]
                ok = 200 <= response.status_code < 300
                return Outcome(ok=ok, status=response.status_code, body=text, error=None if ok else "non-2xx")
        except httpx.HTTPError as exc:
            return Outcome(ok=False, error=f"{type(exc).__name__}: {exc}"[:500])

    async def finish(self, delivery: WebhookDelivery, endpoint_id: uuid.UUID, outcome: Outcome) -> None:
        now = utcnow()
        attempts = delivery.attempts
        values: dict[str, Any] = {
            "locked_by": None,
            "locked_until": None,
            "response_status": outcome.status,
            "response_body": outcome.body,
            "error": outcome.error,
        }
        if outcome.ok:
            values.update(status="succeeded", completed_at=now)
        elif attempts >= self.settings.webhook_max_attempts:
            values.update(status="failed", completed_at=now)
        else:
            values.update(
                status="pending", next_attempt_at=now + timedelta(seconds=backoff(self.settings, attempts))
            )
        async with self.platform.db.unit_of_work(write=True) as uow:
            if not await webhook_deliveries.record_result(uow.session, delivery.id, self.name, values):
                return  # lease lost (another worker took over) or the endpoint was deleted
            endpoint = await uow.session.get(WebhookEndpoint, endpoint_id)
            if endpoint is not None:
                await self.track_health(uow.session, endpoint, outcome.ok, now)
            await uow.commit()

    async def track_health(self, session: Any, endpoint: WebhookEndpoint, ok: bool, now: datetime) -> None:
        """Count consecutive failures; disable an endpoint failing N times over the configured period."""
        if ok:
            endpoint.consecutive_failures = 0
            endpoint.failing_since = None
            return
        endpoint.consecutive_failures += 1
        endpoint.failing_since = endpoint.failing_since or now
        failing_for = (now - as_utc(endpoint.failing_since)).total_seconds()
        s = self.settings
        if (
            endpoint.enabled
            and endpoint.consecutive_failures >= s.webhook_disable_after_failures
            and failing_for >= s.webhook_disable_after_seconds
        ):
            await disable_failing(session, endpoint, failing_for)

    async def __aenter__(self) -> WebhookWorker:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


async def disable_failing(session: Any, endpoint: WebhookEndpoint, failing_for: float) -> None:
    """Disable the endpoint, emit webhook_endpoint.disabled (to the customer's other endpoints) and tell the
    customer with a support ticket (shown in the dashboard and through the tickets API)."""
    reason = f"disabled after {endpoint.consecutive_failures} consecutive failed deliveries"
    hooks.set_enabled(endpoint, False, reason)
    endpoint.updated_at = utcnow()
    await session.flush()
    data = {
        "endpoint_id": str(endpoint.id),
        "url": endpoint.url,
        "consecutive_failures": endpoint.consecutive_failures,
        "failing_for_seconds": int(failing_for),
        "reason": reason,
    }
    await emit(session, endpoint.customer_id, "webhook_endpoint.disabled", data)
    await tickets.open_ticket(
        session,
        endpoint.customer_id,
        "Webhook endpoint disabled",
        f"Your webhook endpoint {endpoint.url} ({endpoint.id}) was {reason} over "
        f"{int(failing_for // 3600)} h {int(failing_for % 3600 // 60)} min. Pending deliveries are kept: fix "
        "the receiver and enable the endpoint again (POST /api/v1/customer/webhooks/{id}/enable) to resume.",
        author=tickets.SUPPORT,
    )
