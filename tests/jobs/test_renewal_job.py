"""The renewal job as a background task (what `proxyplane serve` runs): one pass with an injected clock
renews a due service, and the task stops cleanly."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import httpx
import pytest

from proxyplane.jobs.renewals import run_forever
from proxyplane.platform import Platform
from tests.adapters.rest.growth_support import API, balance, buy, load

pytestmark = pytest.mark.anyio


async def test_background_task_renews_due_service(client: httpx.AsyncClient, platform: Platform) -> None:
    b = await buy(client, platform, country="BG", count=8, stock=8)
    r = await client.put(
        f"{API}/customer/services/{b.sid}/auto-renew", json={"auto_renew": True}, headers=b.headers
    )
    assert r.status_code == 200
    price = r.json()["renewal_price_cents"]
    end = (await load(platform, b.sid)).current_period_end
    assert end is not None
    bal = await balance(client, b.key)
    stop = asyncio.Event()
    task = asyncio.create_task(run_forever(platform, stop, 0.05, clock=lambda: end - timedelta(hours=1)))
    for _ in range(100):
        if (await load(platform, b.sid)).current_period_end != end:
            break
        await asyncio.sleep(0.05)
    stop.set()
    await asyncio.wait_for(task, 10)
    assert (await load(platform, b.sid)).current_period_end != end
    assert await balance(client, b.key) == bal - price  # several passes ran: still one renewal
