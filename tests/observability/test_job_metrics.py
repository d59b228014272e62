"""Job metrics after real work: webhook deliveries (a success and a retry against a real loopback
receiver) with their lag, and renewal passes."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import httpx
import pytest
from prometheus_client import REGISTRY, generate_latest

from proxyplane.core.settings import Settings
from proxyplane.jobs.renewals import run_once
from proxyplane.jobs.webhooks import WebhookWorker
from proxyplane.platform import Platform
from tests.jobs.receiver import Receiver, loopback_webhooks, running_receiver
from tests.jobs.test_webhook_worker import drain, make_endpoint
from tests.support import Account

from .support import delta, parse

pytestmark = pytest.mark.anyio


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return loopback_webhooks(settings)


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    async with running_receiver() as r:
        yield r


def scrape() -> dict:
    return parse(generate_latest(REGISTRY).decode())


async def test_webhook_deliveries_and_lag(
    client: httpx.AsyncClient, platform: Platform, account: Account, receiver: Receiver
) -> None:
    key = await account.key()
    await make_endpoint(client, key, receiver.url, ["wallet.credited"])
    before = scrape()
    receiver.status = 500  # the first attempt fails and is retried
    await account.credit(100)
    async with WebhookWorker(platform, name="metrics-worker") as worker:
        for _ in range(500):  # the refused attempt
            if await worker.run_once():
                break
            await asyncio.sleep(0.01)
        receiver.status = 200
        await drain(worker, lambda: len(receiver.received) == 1)
    after = scrape()
    assert delta(after, before, "proxyplane_webhook_deliveries_total", outcome="retry") == 1
    assert delta(after, before, "proxyplane_webhook_deliveries_total", outcome="succeeded") == 1
    assert delta(after, before, "proxyplane_webhook_delivery_lag_seconds_count") == 2
    lag = delta(after, before, "proxyplane_webhook_delivery_lag_seconds_sum")
    assert 0 < lag < 60


async def test_renewal_runs(platform: Platform) -> None:
    before = scrape()
    await run_once(platform)
    await run_once(platform)
    after = scrape()
    assert delta(after, before, "proxyplane_renewal_runs_total", outcome="ok") == 2
    assert after[("proxyplane_renewal_last_success_timestamp_seconds", ())] > 0
