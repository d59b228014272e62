"""The REST v1 door: every registry operation as a route under /api/v1, the payment callbacks, the
offline docs and the one error mapper. The app itself is assembled in `proxyplane/app.py`."""

from __future__ import annotations

from fastapi import APIRouter, FastAPI

from proxyplane.adapters.rest import errors
from proxyplane.adapters.rest.docs import install_docs
from proxyplane.adapters.rest.payments import payments_router
from proxyplane.adapters.rest.routes import add_operation
from proxyplane.operations import REGISTRY
from proxyplane.ops import served
from proxyplane.platform import Platform

API_PREFIX = "/api/v1"
TITLE = "ProxyPlane customer API"
VERSION = "0.1.0"
DESCRIPTION = (
    "Customer REST API of ProxyPlane. Money is integer cents (USD). Authenticate with "
    "`Authorization: Bearer <API_KEY>`; each endpoint lists the scopes the key must hold. "
    'Errors have one shape: `{"detail": {"error": <code>, "message": <text>, ...}}`.'
)


def rest_router(platform: Platform) -> APIRouter:
    """/api/v1: one route per registry operation, plus the processors' signed payment callbacks."""
    router = APIRouter(prefix=API_PREFIX)
    for op in served("rest", REGISTRY).values():  # never an operation of another door only
        add_operation(router, platform, op)
    router.include_router(payments_router(platform))
    return router


def install_rest(app: FastAPI, platform: Platform) -> None:
    """The error mapper (app-wide: one error body shape), the docs page and the /api/v1 routes."""
    errors.install(app)
    install_docs(app, API_PREFIX, app.title)
    app.include_router(rest_router(platform))
