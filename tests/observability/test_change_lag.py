"""proxyplane_gateway_change_lag_seconds: a change made through the API is applied by a running node and
observed once, write -> applied on the database clock (migration 0017e); idle polls observe nothing."""

from __future__ import annotations

import httpx
import pytest

from proxyplane.gateway.node import GatewayNode
from proxyplane.platform import Platform
from tests.gateway.test_store_static import API, eventually, node_settings
from tests.support import Account, bearer

from .support import SCRAPED_WITHIN, delta, scrape, static_service, value

pytestmark = pytest.mark.anyio
LAG = "proxyplane_gateway_change_lag_seconds"
ONLY = (LAG,)  # the series this test reads (a scrape parses only these)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_api_change_shows_its_lag_and_idle_polls_nothing(
    client: httpx.AsyncClient, platform: Platform, account: Account, tmp_path
) -> None:
    svc = await static_service(client, platform, account)
    settings = node_settings([svc.exit_ip]).model_copy(update={"metrics_port": 0})
    node = GatewayNode(platform.db, platform.secrets, settings, home=tmp_path)
    await node.serve_metrics()
    assert node.metrics is not None
    port = node.metrics.bound_port
    try:
        await node.start()
        idle_start = await scrape(port, ONLY)
        polls = node.store.polls
        await eventually(lambda: _polled_since(node, polls + 3), within=SCRAPED_WITHIN)
        idle = await scrape(port, ONLY)
        assert delta(idle, idle_start, f"{LAG}_count") == 0  # polls that read no change observe nothing

        r = await client.post(
            f"{API}/{svc.service_id}/proxy/whitelist", json={"ip": "127.0.0.79"}, headers=bearer(svc.key)
        )
        assert r.status_code in (200, 201), r.text
        await eventually(lambda: _applied(node, svc.service_id, "127.0.0.79"), within=SCRAPED_WITHIN)

        async def observed() -> bool:
            return delta(await scrape(port, ONLY), idle, f"{LAG}_count") >= 1

        await eventually(observed, within=SCRAPED_WITHIN)
        after = await scrape(port, ONLY)
    finally:
        await node.close()
    count = delta(after, idle, f"{LAG}_count")
    lag = delta(after, idle, f"{LAG}_sum") / count
    assert count == 1  # one API write, one poll that applied it
    assert 0.0 <= lag < 5.0
    assert value(after, f"{LAG}_bucket", le="10.0") - value(idle, f"{LAG}_bucket", le="10.0") == 1


async def _polled_since(node: GatewayNode, polls: int) -> bool:
    return node.store.polls >= polls


async def _applied(node: GatewayNode, service_id: str, ip: str) -> bool:
    entry = node.table.get(service_id)
    return bool(entry is not None and ip in entry.whitelist)
