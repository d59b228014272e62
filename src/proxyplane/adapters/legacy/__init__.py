"""The legacy account API (paths /api/..., HTTP Basic with the account email and password), served on
the same data as v1. `legacy_router` mounts it in the main app; `create_legacy_app` serves it alone (its own
port, PROXYPLANE_LEGACY_PORT)."""

from __future__ import annotations

import os

from fastapi import FastAPI

from proxyplane.adapters.legacy.routes import legacy_router
from proxyplane.platform import Platform

__all__ = ["create_legacy_app", "legacy_port", "legacy_router"]


def legacy_port() -> int | None:
    """The separate legacy port when PROXYPLANE_LEGACY_PORT is set (and not 0)."""
    raw = os.environ.get("PROXYPLANE_LEGACY_PORT", "").strip()
    return int(raw) if raw and int(raw) > 0 else None


def create_legacy_app(platform: Platform) -> FastAPI:
    app = FastAPI(
        title="ProxyPlane legacy account API",
        version="1.0.2",
        openapi_url=None,
        docs_url=None,
        redoc_url=None,
    )
    app.state.platform = platform
    app.include_router(legacy_router(platform))
    return app
