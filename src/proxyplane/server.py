"""`proxyplane serve`: migrate, then run the API app (with its lifespan parts) under uvicorn."""

from __future__ import annotations

import asyncio

import uvicorn

from proxyplane.core.settings import Settings
from proxyplane.platform import Platform
from proxyplane.storage.migrate import upgrade


def serve_all(settings: Settings) -> None:
    asyncio.run(upgrade(settings.resolved_database_url()))
    from proxyplane.adapters.rest.app import create_app

    platform = Platform(settings)
    app = create_app(platform)
    base = settings.base_url()
    print(f"ProxyPlane on {settings.resolved_database_url().split('://')[0]}", flush=True)
    print(
        f"  REST API       {base}/api/v1   (OpenAPI {base}/api/v1/openapi.json, docs {base}/api/v1/docs)",
        flush=True,
    )
    config = uvicorn.Config(
        app, host=settings.api_host, port=settings.api_port, log_level="info", proxy_headers=False
    )
    uvicorn.Server(config).run()
