"""A node that cannot reach the store (issue 32, "bad input and faults"): it keeps enforcing the quotas it
knew (a used-up service stays refused, no free traffic because the database is down), serves the others
on what it counts, and says so: the gauges quota_data_stale = 1 and quota_data_age_seconds growing, and
/readyz "degraded: quota data stale"; once the store answers again both clear. The store here is a real
PostgreSQL address nobody listens on, swapped in for the node's change-log reads."""

from __future__ import annotations

import time
from typing import Any

import pytest
from prometheus_client import REGISTRY, generate_latest

from proxyplane.platform import Platform
from proxyplane.storage.engine import Database
from tests.domains.quotas.support import MIB, flush, metered_service, quota_row
from tests.domains.stock.support import fresh_stock
from tests.observability.support import parse, value
from tests.support import Account

from .clients import basic, connect_tunnel
from .conftest import free_port
from .test_store_static import eventually, node_settings, running_node

pytestmark = pytest.mark.anyio
PASSWORD = "service-password"  # tests/domains/subusers/support.make_service


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_an_unreachable_store_keeps_quotas_enforced_and_says_stale(
    platform: Platform, account: Account, tcp_echo: Any, tmp_path: Any
) -> None:
    await fresh_stock(platform, "proxy_datacenter", "US", 1)
    spent = await metered_service(platform, account, 4 * MIB)
    room = await metered_service(platform, account, 4 * MIB)
    await flush(platform, spent.service_id, 4 * MIB)
    assert (await quota_row(platform, spent.service_id)).limit_reached
    target = f"127.0.0.1:{tcp_echo.port}"
    dead = Database(f"postgresql+asyncpg://postgres@127.0.0.1:{free_port(['127.0.0.1'])}/none")
    async with running_node(platform, node_settings(["127.0.0.1"]), tmp_path) as node:
        http = ("127.0.0.1", node.gateway.gateway_port("http"))
        gauges = node.gauges()
        assert gauges["quota_services"] >= 2 and gauges["quota_data_stale"] == 0
        assert node.degraded() is None
        scraped = parse(generate_latest(REGISTRY).decode())
        assert value(scraped, "proxyplane_gateway_quota_services") >= 2

        node.stale_after = 1.0  # the threshold (default max(5 s, 20 polls)), short for the test
        store_db, node.store.db = node.store.db, dead
        try:
            await eventually(lambda: _true(node.quota_stale() is not None), within=10.0)
            gauges = node.gauges()
            assert gauges["quota_data_stale"] == 1 and gauges["quota_data_age_seconds"] > 1.0
            assert "quota data stale" in (node.degraded() or "")
            scraped = parse(generate_latest(REGISTRY).decode())
            assert value(scraped, "proxyplane_gateway_quota_data_stale") >= 1
            # what it knew still holds: the used-up service is refused, the other one serves
            status, _, w = await connect_tunnel(http, target, basic(spent.login, PASSWORD))
            assert status == 402
            w.close()
            status, _, w = await connect_tunnel(http, target, basic(room.login, PASSWORD))
            assert status == 200
            w.close()
        finally:
            node.store.db = store_db
            await dead.dispose()
        start = time.monotonic()
        await eventually(lambda: _true(node.quota_stale() is None), within=10.0)
        assert node.gauges()["quota_data_stale"] == 0 and time.monotonic() - start < 10
        assert node.degraded() is None


async def _true(flag: bool) -> bool:
    return flag
