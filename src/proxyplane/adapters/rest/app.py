"""The REST v1 door: every registry operation as a route under /api/v1, the payment callbacks, the
offline docs and the one error mapper. The app itself is assembled in `proxyplane/app.py`."""

from __future__ import annotations

from fastapi import APIRouter, FastAPI
from starlette.routing import BaseRoute

from proxyplane.adapters.rest import errors
from proxyplane.adapters.rest.docs import install_docs
from proxyplane.adapters.rest.payments import payments_router
from proxyplane.adapters.rest.routes import add_operation
from proxyplane.operations import REGISTRY
from proxyplane.ops import Operation, served
from proxyplane.platform import Platform

API_PREFIX = "/api/v1"
TITLE = "ProxyPlane customer API"
VERSION = "0.1.0"
DESCRIPTION = (
    "Customer REST API of ProxyPlane. Money is integer cents (USD). Authenticate with "
    "`Authorization: Bearer <API_KEY>`; each endpoint lists the scopes the key must hold. "
    'Errors have one shape: `{"detail": {"error": <code>, "message": <text>, ...}}`.'
)


_ROUTES: dict[tuple[int, ...], tuple[tuple[Operation, ...], tuple[BaseRoute, ...]]] = {}


def operation_routes(ops: list[Operation]) -> list[BaseRoute]:
    """/api/v1: one route per operation, built once per process for a given list of operations and shared
    by every app built afterwards (tests build one app per test): FastAPI's set-up of a route (parameter
    and response models) is most of an app's construction, and an included router does it again at the
    first request. The routes hold no platform (routes.add_operation)."""
    key = tuple(id(op) for op in ops)
    if key not in _ROUTES:
        router = APIRouter(prefix=API_PREFIX)
        for op in ops:
            add_operation(router, op)
        _ROUTES[key] = (tuple(ops), tuple(router.routes))  # the operations kept alive: their ids stay theirs
    return list(_ROUTES[key][1])


def install_rest(app: FastAPI, platform: Platform) -> None:
    """The error mapper (app-wide: one error body shape), the docs page, the /api/v1 routes of every
    operation the REST door serves (never one of another door only) and the processors' signed payment
    callbacks. The app's own router takes the routes as they are (no include: nothing to copy again)."""
    errors.install(app)
    install_docs(app, API_PREFIX, app.title)
    app.router.routes.extend(operation_routes(list(served("rest", REGISTRY).values())))
    app.include_router(payments_router(platform), prefix=API_PREFIX)
