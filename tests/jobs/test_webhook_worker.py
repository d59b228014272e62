"""The outbox worker against a real HTTP receiver on loopback: signatures, retries, order, outages,
redelivery, automatic disabling, and nothing sent for a rolled-back change."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

import httpx
import pytest
from sqlalchemy import func, select

from proxyplane.core.settings import Settings
from proxyplane.domains.wallet import service as wallet
from proxyplane.jobs.webhooks import WebhookWorker
from proxyplane.platform import Platform
from proxyplane.storage.models import Event, Ticket, WebhookDelivery
from tests.jobs.receiver import Receiver, loopback_webhooks, running_receiver
from tests.support import Account, bearer

pytestmark = pytest.mark.anyio


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return loopback_webhooks(settings)


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    async with running_receiver() as r:
        yield r


@pytest.fixture
async def worker(platform: Platform) -> AsyncIterator[WebhookWorker]:
    async with WebhookWorker(platform, name="test-worker") as w:
        yield w


async def drain(worker: WebhookWorker, done: Callable[[], bool], seconds: float = 15.0) -> None:
    deadline = asyncio.get_running_loop().time() + seconds
    while not done():
        assert asyncio.get_running_loop().time() < deadline, "deliveries did not finish in time"
        if await worker.run_once() == 0:
            await asyncio.sleep(0.01)


async def make_endpoint(client: httpx.AsyncClient, key: str, url: str, types: list[str]) -> dict:
    r = await client.post(
        "/api/v1/customer/webhooks", json={"url": url, "event_types": types}, headers=bearer(key)
    )
    assert r.status_code == 201, r.text
    return r.json()


async def test_signed_delivery_verifies_with_standardwebhooks(
    client: httpx.AsyncClient, account: Account, receiver: Receiver, worker: WebhookWorker
) -> None:
    key = await account.key()
    ep = await make_endpoint(client, key, receiver.url, ["wallet.credited"])
    await account.credit(1234)
    await drain(worker, lambda: len(receiver.received) == 1)
    [payload] = receiver.verified(ep["secret"])
    assert payload["type"] == "wallet.credited" and payload["data"]["amount_cents"] == 1234
    got = receiver.received[0]
    assert got.webhook_id == payload["id"] and got.headers["webhook-signature"].startswith("v1,")
    assert got.headers["host"] == f"127.0.0.1:{receiver.port}"
    deliveries = (
        await client.get(f"/api/v1/customer/webhooks/{ep['endpoint_id']}/deliveries", headers=bearer(key))
    ).json()
    [d] = deliveries["items"]
    assert d["status"] == "succeeded" and d["attempts"] == 1 and d["response_status_code"] == 200
    assert d["response_body"] == "ok" and d["webhook_id"] == payload["id"] and d["next_attempt_at"] is None


async def test_receiver_outage_every_event_once_in_order(
    client: httpx.AsyncClient, account: Account, receiver: Receiver, worker: WebhookWorker
) -> None:
    key = await account.key()
    ep = await make_endpoint(client, key, receiver.url, ["wallet.credited"])
    for cents in range(1, 6):
        await account.credit(cents)
    await drain(worker, lambda: len(receiver.received) == 5)
    await receiver.stop()  # the receiver goes away mid-stream
    for cents in range(6, 16):
        await account.credit(cents)
    for _ in range(5):  # attempts fail (connection refused) and are rescheduled
        await worker.run_once()
        await asyncio.sleep(0.02)
    assert len(receiver.received) == 5
    pending = (
        await client.get(
            f"/api/v1/customer/webhooks/{ep['endpoint_id']}/deliveries?status=pending", headers=bearer(key)
        )
    ).json()
    head = min(pending["items"], key=lambda d: d["created_at"])
    assert pending["total"] == 10 and head["attempts"] >= 2 and head["error"].startswith("ConnectError")
    receiver.fail_times = {}  # back, and the next event fails twice with a 500 first
    await receiver.start()
    await drain(worker, lambda: len(receiver.received) == 15)
    payloads = receiver.verified(ep["secret"])
    assert [p["data"]["amount_cents"] for p in payloads] == list(range(1, 16))  # in order
    ids = [r.webhook_id for r in receiver.received]
    assert len(set(ids)) == 15  # none twice


async def test_retries_after_errors_keep_order_and_record_truncated_body(
    client: httpx.AsyncClient, platform: Platform, account: Account, receiver: Receiver, worker: WebhookWorker
) -> None:
    key = await account.key()
    ep = await make_endpoint(client, key, receiver.url, ["wallet.credited"])
    await account.credit(100)
    await account.credit(200)
    async with platform.db.unit_of_work(write=False) as uow:
        first = await uow.session.scalar(
            select(Event)
            .where(Event.customer_id == account.customer_id, Event.type == "wallet.credited")
            .order_by(Event.created_at)
            .limit(1)
        )
    receiver.fail_times = {f"evt_{first.id.hex}": 2}
    await drain(worker, lambda: len(receiver.received) == 2)
    assert [p["data"]["amount_cents"] for p in receiver.verified(ep["secret"])] == [100, 200]
    items = (
        await client.get(f"/api/v1/customer/webhooks/{ep['endpoint_id']}/deliveries", headers=bearer(key))
    ).json()["items"]
    by_amount = {d["payload"]["data"]["amount_cents"]: d for d in items}
    assert by_amount[100]["attempts"] == 3 and by_amount[200]["attempts"] == 1
    async with platform.db.unit_of_work(write=False) as uow:
        ep_health = await uow.session.scalar(
            select(func.count()).where(
                WebhookDelivery.status == "failed", WebhookDelivery.customer_id == account.customer_id
            )
        )
    assert ep_health == 0


async def test_failed_delivery_body_truncated_and_redelivery_keeps_webhook_id(
    client: httpx.AsyncClient, account: Account, receiver: Receiver, worker: WebhookWorker, platform: Platform
) -> None:
    platform.settings = platform.settings.model_copy(update={"webhook_max_attempts": 2})
    worker.settings = platform.settings
    key = await account.key()
    ep = await make_endpoint(client, key, receiver.url, [])
    base = f"/api/v1/customer/webhooks/{ep['endpoint_id']}"
    test = await client.post(f"{base}/test", headers=bearer(key))
    assert test.status_code == 201 and test.json()["event_type"] == "webhook.test"
    receiver.fail_times = {test.json()["webhook_id"]: 5}
    deliveries = lambda: client.get(f"{base}/deliveries", headers=bearer(key))  # noqa: E731
    for _ in range(200):
        await worker.run_once()
        if (await deliveries()).json()["items"][0]["status"] == "failed":
            break
        await asyncio.sleep(0.01)
    failed = (await deliveries()).json()["items"][0]
    assert failed["status"] == "failed" and failed["attempts"] == 2 and failed["response_status_code"] == 500
    assert failed["response_body"] == "x" * 1000  # truncated
    receiver.fail_times = {}
    again = await client.post(f"{base}/deliveries/{failed['delivery_id']}/redeliver", headers=bearer(key))
    assert again.status_code == 201 and again.json()["webhook_id"] == failed["webhook_id"]
    await drain(worker, lambda: len(receiver.received) == 1)
    [payload] = receiver.verified(ep["secret"])
    assert payload["type"] == "webhook.test" and receiver.received[0].webhook_id == failed["webhook_id"]


async def test_endpoint_failing_long_is_disabled_and_customer_told(
    client: httpx.AsyncClient, account: Account, receiver: Receiver, worker: WebhookWorker, platform: Platform
) -> None:
    platform.settings = platform.settings.model_copy(
        update={"webhook_disable_after_failures": 3, "webhook_disable_after_seconds": 0.0}
    )
    worker.settings = platform.settings
    key = await account.key()
    ep = await make_endpoint(client, key, receiver.url, ["wallet.credited"])
    watcher = await make_endpoint(client, key, receiver.url + "&watcher=1", ["webhook_endpoint.disabled"])
    receiver.status = 503
    await account.credit(5)
    base = f"/api/v1/customer/webhooks/{ep['endpoint_id']}"
    for _ in range(200):
        await worker.run_once()
        if not (await client.get(base, headers=bearer(key))).json()["enabled"]:
            break
        await asyncio.sleep(0.01)
    record = (await client.get(base, headers=bearer(key))).json()
    assert record["enabled"] is False and "3 consecutive failed deliveries" in record["disabled_reason"]
    receiver.status = 200
    await drain(worker, lambda: len(receiver.received) == 1)
    [notice] = receiver.verified(watcher["secret"])
    assert (
        notice["type"] == "webhook_endpoint.disabled" and notice["data"]["endpoint_id"] == ep["endpoint_id"]
    )
    tickets = (await client.get("/api/v1/customer/tickets", headers=bearer(key))).json()["items"]
    assert [t["subject"] for t in tickets] == ["Webhook endpoint disabled"]
    # the pending delivery waits; enabling resumes it
    assert (await client.post(f"{base}/enable", headers=bearer(key))).json()["enabled"] is True
    await drain(worker, lambda: len(receiver.received) == 2)
    assert receiver.received[1].payload["data"]["amount_cents"] == 5


async def test_rolled_back_change_emits_nothing(
    platform: Platform, account: Account, receiver: Receiver, client: httpx.AsyncClient, worker: WebhookWorker
) -> None:
    key = await account.key()
    await make_endpoint(client, key, receiver.url, ["wallet.credited"])

    async def count(model: type) -> int:
        async with platform.db.unit_of_work(write=False) as uow:
            return int(
                await uow.session.scalar(
                    select(func.count()).select_from(model).where(model.customer_id == account.customer_id)
                )
                or 0
            )

    before = (await count(Event), await count(WebhookDelivery))
    with pytest.raises(RuntimeError):
        async with platform.db.unit_of_work() as uow:
            await wallet.credit(uow.session, account.customer_id, 700, "adjustment", "rolled back")
            assert (
                await uow.session.scalar(
                    select(func.count())
                    .select_from(Event)
                    .where(Event.customer_id == account.customer_id, Event.type == "wallet.credited")
                )
                == 1
            )
            raise RuntimeError("the change fails after emitting")
    assert (await count(Event), await count(WebhookDelivery)) == before
    await worker.run_once()
    assert receiver.received == []
    assert await count(Ticket) == 0
