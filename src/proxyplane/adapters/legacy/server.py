"""The legacy API on its own port (PROXYPLANE_LEGACY_PORT), run by `proxyplane serve` as a lifespan part
of the main app: a second uvicorn server in the same process and event loop, same platform and data."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import uvicorn

from proxyplane.adapters.legacy import create_legacy_app, legacy_port
from proxyplane.platform import Platform


@contextlib.asynccontextmanager
async def serve_legacy(platform: Platform, port: int) -> AsyncIterator[uvicorn.Server]:
    config = uvicorn.Config(
        create_legacy_app(platform),
        host=platform.settings.api_host,
        port=port,
        log_level="info",
        proxy_headers=False,
        lifespan="off",
    )
    server = uvicorn.Server(config)
    server.install_signal_handlers = lambda: None  # type: ignore[attr-defined]  # the main server owns them
    task = asyncio.create_task(server.serve())
    while not server.started and not task.done():
        await asyncio.sleep(0.01)
    if task.done():
        task.result()  # raise the start-up error (port taken...)
    try:
        yield server
    finally:
        server.should_exit = True
        await task


def legacy_parts(platform: Platform) -> list[object]:
    """[the separate legacy server] when PROXYPLANE_LEGACY_PORT is set, else [] (it is always on /api)."""
    port = legacy_port()
    if port is None:
        return []
    print(f"  legacy API     http://{platform.settings.api_host}:{port}/api", flush=True)
    return [serve_legacy(platform, port)]
