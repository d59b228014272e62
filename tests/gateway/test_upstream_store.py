"""An upstream pool end to end with the store (issue 36.4), on both tunnel paths: the supplier (pproxy)
registered through the operator operation, a metered service whose parameters name the pool, a real node:
the node reads the pool, chains the customer's tunnels through the supplier, the service's quota cuts them
and refuses with 402 as for local exits, and the bytes the node relayed through the supplier reach
upstream_usage through the node's usage spool, so the margin report prices them."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from sqlalchemy import delete

from proxyplane.domains.quotas import service as quotas
from proxyplane.platform import Platform
from proxyplane.storage.models.upstreams import Upstream
from tests.domains.operators.helpers import run
from tests.domains.quotas.support import MIB, errors_of, service_of
from tests.domains.subusers.support import make_service
from tests.domains.upstreams.suppliers import free_tcp_port, pproxy
from tests.support import Account

from .clients import basic, connect_tunnel, http_get
from .conftest import BACKENDS
from .processes import usage
from .test_quotas import PASSWORD, pump
from .test_store_static import node_settings, running_node

pytestmark = pytest.mark.anyio
QUOTA = 2 * MIB


@pytest.fixture(params=BACKENDS, ids=lambda b: "engine" if b[1] else "python")
def anyio_backend(request: Any) -> Any:
    return request.param


async def test_a_pool_service_through_a_node_is_metered_cut_at_its_quota_and_priced(
    platform: Platform, account: Account, tcp_echo: Any, tmp_path: Any
) -> None:
    pool = f"s{uuid.uuid4().hex[:10]}"
    params = {"upstream_pool": pool, "quota_period": "term", "quota_bytes": QUOTA, "gb_price_cents": 250}
    svc = await make_service(platform, account, parameters=params)
    async with platform.db.unit_of_work() as uow:
        await quotas.ensure_row(uow.session, await service_of(uow.session, svc.service_id))
        await uow.commit()
    target = f"127.0.0.1:{tcp_echo.port}"
    auth = basic(svc.login, PASSWORD)
    async with pproxy("http", "acct", "sup-pw") as port:
        made = await run(platform, "operator_upstream_add", pool=pool, scheme="http", host="127.0.0.1",
                         port=port, username="acct", password="sup-pw", cost_per_gb_cents=1_000_000)
        async with running_node(platform, node_settings(["127.0.0.1"]), tmp_path) as node:
            http = ("127.0.0.1", node.gateway.gateway_port("http"))
            status, reader, writer = await connect_tunnel(http, target, auth)
            assert status == 200
            moved = await pump(reader, writer, within=20)
            writer.close()
            assert QUOTA - 2 * 65536 <= moved <= QUOTA + 3 * MIB, moved
            assert tcp_echo.peers == ["127.0.0.1"] * len(tcp_echo.peers)  # pproxy dialled it
            status, _, _ = await http_get(http, f"http://{target}/", auth)
            assert status == 402
            await asyncio.sleep(0.1)
            await node.flush_usage()  # through the spool: the supplier's count with the customer's usage
            report = await run(platform, "operator_upstream_margin", days=1, pool=pool)
    errors = await errors_of(platform, svc.service_id)
    assert errors.get("quota_exhausted", 0) >= 1
    [entry] = report["pools"]
    [sup] = entry["upstreams"]
    assert sup["upstream_id"] == made["upstream_id"] and sup["tunnels"] == 1
    up, down = await usage(platform, str(svc.service_id))
    assert up + down == sup["bytes"]  # the customer's metering and the supplier's count agree
    assert moved <= sup["bytes"] <= moved + 2 * 65536  # what the echo moved (the last chunk may be in flight)
    assert sup["cost_cents"] == -(-sup["bytes"] * 1_000_000 // 10**9)
    async with platform.db.unit_of_work() as uow:
        await uow.session.execute(delete(Upstream).where(Upstream.pool == pool))
        await uow.commit()


async def test_a_dead_supplier_is_failed_over_and_none_left_is_a_502_in_the_usage_errors(
    platform: Platform, account: Account, tcp_echo: Any, tmp_path: Any
) -> None:
    """Through a node reading the pools from the store: a pool whose first supplier is down (a closed
    port) and second is pproxy opens the tunnel through pproxy; a pool whose only supplier is down answers
    502, and the service's stored usage errors count it under `upstream_failed`."""
    live_pool, dead_pool = f"s{uuid.uuid4().hex[:10]}", f"s{uuid.uuid4().hex[:10]}"
    failing = await make_service(platform, account, parameters={"upstream_pool": live_pool})
    stranded = await make_service(platform, account, parameters={"upstream_pool": dead_pool})
    target = f"127.0.0.1:{tcp_echo.port}"
    dead = {"scheme": "http", "host": "127.0.0.1", "username": "acct", "password": "sup-pw"}
    try:
        async with pproxy("http", "acct", "sup-pw") as port:
            await run(platform, "operator_upstream_add", pool=live_pool, port=free_tcp_port(), **dead)
            await run(platform, "operator_upstream_add", pool=live_pool, port=port, **dead)
            await run(platform, "operator_upstream_add", pool=dead_pool, port=free_tcp_port(), **dead)
            async with running_node(platform, node_settings(["127.0.0.1"]), tmp_path) as node:
                http = ("127.0.0.1", node.gateway.gateway_port("http"))
                status, reader, writer = await connect_tunnel(http, target, basic(failing.login, PASSWORD))
                assert status == 200  # the second supplier carried it
                writer.write(b"ping")
                assert await asyncio.wait_for(reader.readexactly(4), 5) == b"ping"
                writer.close()
                status, _, writer = await connect_tunnel(http, target, basic(stranded.login, PASSWORD))
                writer.close()
                assert status == 502
                await asyncio.sleep(0.1)
                await node.flush_usage()
        assert await errors_of(platform, stranded.service_id) == {"upstream_failed": 1}
        assert "upstream_failed" not in await errors_of(platform, failing.service_id)
    finally:
        async with platform.db.unit_of_work() as uow:
            await uow.session.execute(delete(Upstream).where(Upstream.pool.in_([live_pool, dead_pool])))
            await uow.commit()
