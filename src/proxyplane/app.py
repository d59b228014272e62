"""The composition root: the one place the control-plane ASGI app is assembled from the doors.

REST v1 and the payment callbacks (`adapters/rest`), the legacy account API at /api (`adapters/legacy`),
the test processor's checkout pages (`adapters/checkout`), the customer dashboard at / (`adapters/web`)
and MCP at /api/v1/mcp (`adapters/mcp`). No adapter imports another adapter; they meet only here."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from fastapi import FastAPI

from proxyplane.adapters.admin import install_console
from proxyplane.adapters.admin_api import install_admin_api
from proxyplane.adapters.checkout.pages import checkout_router
from proxyplane.adapters.legacy import legacy_router
from proxyplane.adapters.mcp.server import mount_mcp
from proxyplane.adapters.oauth.routes import install_oauth
from proxyplane.adapters.rest import route_table
from proxyplane.adapters.rest.app import API_PREFIX, DESCRIPTION, TITLE, VERSION, install_rest
from proxyplane.adapters.web import install_dashboard
from proxyplane.observability.http import install as install_observability
from proxyplane.platform import Platform


def create_app(platform: Platform, lifespan_parts: list[Any] | None = None) -> FastAPI:
    """Build the app. `lifespan_parts` are async context managers entered at startup (gateway, jobs ...);
    MCP's session manager is entered after them."""

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        async with contextlib.AsyncExitStack() as stack:
            for part in [*(lifespan_parts or []), mcp.run_sessions(), admin_mcp.session_manager.run()]:
                await stack.enter_async_context(part)
            yield

    app = FastAPI(
        title=TITLE,
        version=VERSION,
        description=DESCRIPTION,
        openapi_url=f"{API_PREFIX}/openapi.json",
        docs_url=None,  # served from the package, offline: adapters/rest/docs.py
        redoc_url=None,
        lifespan=lifespan,
        # no OpenTelemetry here (Prometheus metrics and our own logs: observability/): FastAPI's native
        # telemetry would otherwise ask three global providers on every request (issue 15: HTTP CPU)
        telemetry={"tracing": False, "metrics": False, "logs": False, "operation_spans": False},
    )
    app.state.platform = platform
    install_observability(app, platform)  # request ids, HTTP metrics, /metrics /livez /readyz (issue 17)
    install_rest(app, platform)  # /api/v1 (every registry route), its docs, payment callbacks, error mapper
    app.include_router(legacy_router(platform))  # the legacy account API at /api
    app.include_router(checkout_router(platform))
    install_dashboard(app)  # the customer dashboard at /
    install_console(app)  # the operator console at /admin (issue 33)
    admin_mcp = install_admin_api(app, platform)  # /api/admin/v1, its OpenAPI, its MCP (issue 33)
    install_oauth(app, platform)  # OAuth 2.1 for MCP: metadata, authorize, token, revoke (issue 21.2)
    mcp = mount_mcp(app, platform)  # /api/v1/mcp; its session manager runs in the lifespan above
    route_table.install(app.router)  # (method, path) looked up before the linear walk (issue 15)
    return app
