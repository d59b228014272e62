"""The control-plane ASGI app: REST v1 (from the registry), payment callbacks, checkout pages."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, FastAPI

from proxyplane.adapters.rest import errors
from proxyplane.adapters.rest.docs import install_docs
from proxyplane.adapters.rest.routes import add_operation
from proxyplane.operations import REGISTRY
from proxyplane.platform import Platform

API_PREFIX = "/api/v1"
DESCRIPTION = (
    "Customer REST API of ProxyPlane. Money is integer cents (USD). Authenticate with "
    "`Authorization: Bearer <API_KEY>`; each endpoint lists the scopes the key must hold. "
    'Errors have one shape: `{"detail": {"error": <code>, "message": <text>, ...}}`.'
)


def create_app(platform: Platform, lifespan_parts: list[Any] | None = None) -> FastAPI:
    """Build the app. `lifespan_parts` are async context managers entered at startup (MCP, gateway, jobs)."""

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        async with contextlib.AsyncExitStack() as stack:
            for part in [*(lifespan_parts or []), mcp.session_manager.run()]:
                await stack.enter_async_context(part)
            yield

    app = FastAPI(
        title="ProxyPlane customer API",
        version="0.1.0",
        description=DESCRIPTION,
        openapi_url=f"{API_PREFIX}/openapi.json",
        docs_url=None,  # served from the package, offline: adapters/rest/docs.py
        redoc_url=None,
        lifespan=lifespan,
    )
    app.state.platform = platform
    errors.install(app)
    install_docs(app, API_PREFIX, app.title)
    router = APIRouter(prefix=API_PREFIX)
    for op in REGISTRY.values():
        add_operation(router, platform, op)
    from proxyplane.adapters.rest.payments import payments_router

    router.include_router(payments_router(platform))
    app.include_router(router)
    from proxyplane.adapters.legacy import legacy_router

    app.include_router(legacy_router(platform))  # the legacy account API at /api
    from proxyplane.adapters.checkout.pages import checkout_router

    app.include_router(checkout_router(platform))
    from proxyplane.adapters.web import install_dashboard

    install_dashboard(app)  # the customer dashboard at /
    from proxyplane.adapters.mcp.server import mount_mcp

    mcp = mount_mcp(app, platform)  # /api/v1/mcp; its session manager runs in the lifespan above
    return app
