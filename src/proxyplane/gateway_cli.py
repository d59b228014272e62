"""`proxyplane gateway`: a gateway node on its own against the shared store; and the gateway part that
`proxyplane serve` runs inside the API process (with the in-process change fast path)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import AsyncIterator

from proxyplane.cli import main
from proxyplane.core.gateway_settings import GatewaySettings
from proxyplane.core.security import SecretBox
from proxyplane.core.settings import get_settings
from proxyplane.gateway.node import GatewayNode
from proxyplane.platform import Platform


@contextlib.asynccontextmanager
async def gateway_part(platform: Platform) -> AsyncIterator[GatewayNode | None]:
    """Lifespan part of `serve`: start a node, subscribe it to 'entitlements_changed', print listeners."""
    settings = GatewaySettings()
    if "PROXYPLANE_GATEWAY_DEV_ALLOW_LOOPBACK" not in os.environ:  # the embedded demo: all on loopback
        settings = settings.model_copy(update={"dev_allow_loopback": True})
    if not settings.in_serve:
        yield None
        return
    node = GatewayNode(platform.db, platform.secrets, settings, home=platform.settings.home)
    await node.start()
    platform.on("entitlements_changed", node.notify)
    for line in node.listeners():
        print(f"  gateway        {line}", flush=True)
    try:
        yield node
    finally:
        await node.close()


async def run_node() -> None:
    from proxyplane.storage.engine import Database
    from proxyplane.storage.migrate import upgrade

    settings = get_settings()
    url = settings.resolved_database_url()
    await upgrade(url)
    db = Database(url)
    node = GatewayNode(db, SecretBox(settings.resolved_secret_key()), GatewaySettings(), home=settings.home)
    await node.start()
    print(f"gateway node {node.sticky.node_id} on {url.split('://')[0]}", flush=True)
    for line in node.listeners():
        print(f"  {line}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        await node.close()
        await db.dispose()


@main.command()
def gateway() -> None:
    """Run a gateway node on its own against the shared store (PROXYPLANE_DATABASE_URL; PostgreSQL when
    scaled out). Ports: PROXYPLANE_GATEWAY_* (see proxyplane.core.gateway_settings); loopback only."""
    from proxyplane.gateway.server import install_uvloop

    install_uvloop()
    asyncio.run(run_node())
