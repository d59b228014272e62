"""`proxyplane serve`: migrate, then run the API app (with its lifespan parts) under uvicorn."""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator

import uvicorn

from proxyplane.cli import heap
from proxyplane.core.settings import Settings
from proxyplane.platform import Platform
from proxyplane.storage.migrate import upgrade


def serve_all(settings: Settings) -> None:
    asyncio.run(upgrade(settings.resolved_database_url()))
    asyncio.run(_seed_if_empty(settings.resolved_database_url()))
    from proxyplane.app import create_app

    platform = Platform(settings)
    from proxyplane.adapters.legacy.server import legacy_parts
    from proxyplane.cli.gateway import gateway_part
    from proxyplane.cli.http_writes import WriteCoalescingProtocol
    from proxyplane.observability import logs
    from proxyplane.observability.http import metrics_part
    from proxyplane.observability.settings import ObservabilitySettings

    observability = ObservabilitySettings()
    logs.from_env()  # uvicorn's loggers too: PROXYPLANE_LOG_FORMAT=json, secrets redacted
    parts = [_warm_pool(platform), *_jobs(platform), gateway_part(platform), *legacy_parts(platform)]
    parts += [metrics_part(platform), _settled_heap()]
    app = create_app(platform, lifespan_parts=parts)
    base = settings.base_url()
    print(f"ProxyPlane on {settings.resolved_database_url().split('://')[0]}", flush=True)
    print(
        f"  REST API       {base}/api/v1   (OpenAPI {base}/api/v1/openapi.json, docs {base}/api/v1/docs)",
        flush=True,
    )
    config = uvicorn.Config(
        app,
        host=settings.api_host,
        port=settings.api_port,
        log_level="info",
        http=WriteCoalescingProtocol,  # one socket write per response (cli/http_writes.py)
        proxy_headers=False,
        log_config=None,  # logs.from_env above; the access line is observability/http.py's (with request id)
        access_log=False,
        timeout_graceful_shutdown=observability.graceful_shutdown_seconds,  # SIGTERM: in-flight finish
        timeout_keep_alive=75,  # idle keep-alive outlives clients' and balancers' (decisions: keep-alive)
    )
    uvicorn.Server(config).run()


async def _seed_if_empty(url: str) -> None:
    """First start: seed the demo stock and catalog (loopback IPs) when the database has no stock."""
    from proxyplane.domains.stock.seed import seed_demo
    from proxyplane.domains.stock.service import has_stock
    from proxyplane.storage.engine import Database
    from proxyplane.storage.migrate import SEED_LOCK, startup_lock

    db = Database(url)
    try:
        async with db.unit_of_work(write=True) as uow:
            await startup_lock(uow.session, SEED_LOCK)  # several processes at once: the first seeds
            if not await has_stock(uow.session):
                added = await seed_demo(uow.session)
                await uow.commit()
                print(f"seeded demo stock: {added['ips']} IPs, {added['products']} products", flush=True)
    finally:
        await db.dispose()


@contextlib.asynccontextmanager
async def _warm_pool(platform: Platform) -> AsyncIterator[None]:
    """Open the PostgreSQL pool's connections before the first request (Database.warm): a burst of buyers
    right after a start or deploy would otherwise wait behind one connection set-up each."""
    await platform.db.warm()
    yield


@contextlib.asynccontextmanager
async def _settled_heap() -> AsyncIterator[None]:
    heap.settle()  # the last part entered: start-up's objects frozen, no full collection pass over them
    yield


def _jobs(platform: Platform) -> list[object]:
    """The webhook outbox worker runs inside serve unless PROXYPLANE_WORKER_IN_SERVE=false."""
    from proxyplane.jobs.worker import worker_task

    parts: list[object] = [worker_task(platform)] if platform.settings.worker_in_serve else []
    # the renewal job (issue 5) too, unless PROXYPLANE_RENEWALS_IN_SERVE=false (then: proxyplane renewals)
    if os.environ.get("PROXYPLANE_RENEWALS_IN_SERVE", "true").lower() not in ("0", "false", "no"):
        from proxyplane.jobs.renewals import renewal_task

        parts.append(renewal_task(platform))
    return parts
