"""A gateway node made a worker of its host (`proxyplane gateway --workers N`, cli/gateway.as_worker): its
local addresses reach the router it serves with, so a rotating pool spanning hosts is chosen from this
host's exits only, as on a single-process node (an exit elsewhere, TEST-NET-3, cannot be bound here)."""

from __future__ import annotations

from pathlib import Path

import pytest

from proxyplane.cli.gateway import as_worker
from proxyplane.gateway.access import Grant, ServiceEntry
from proxyplane.gateway.node import GatewayNode
from proxyplane.gateway.workers import HostShared
from proxyplane.platform import Platform
from tests.gateway.test_store_static import node_settings

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_a_workers_router_knows_the_hosts_addresses(platform: Platform, tmp_path: Path) -> None:
    node = GatewayNode(platform.db, platform.secrets, node_settings(["127.0.0.1"]), home=tmp_path)
    shared = HostShared(1, services=64, sessions=64)
    as_worker(node, shared, 0)
    await node.start()
    try:
        exits = {"127.0.0.2": "us", "203.0.113.7": "us"}
        entry = ServiceEntry("spans-hosts", "rotating", "u", "p", exit_ips=exits,  # type: ignore[arg-type]
                             session_mode="rotating")
        chosen = {node.gateway.ctx.router.choose(Grant(entry, None), None) for _ in range(40)}
        assert chosen == {"127.0.0.2"}
    finally:
        await node.close()
