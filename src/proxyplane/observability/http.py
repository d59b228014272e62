"""The API's side of observability, wired by ``install(app, platform)`` (app.py):

- ``RequestMiddleware`` (pure ASGI): a request id per request (the caller's ``X-Request-Id`` when it is a
  sane token, else a new one), returned in the ``X-Request-Id`` response header and set for every log line
  of the request (logs.REQUEST_ID); one access log line (method, route template, status, milliseconds);
  ``proxyplane_http_requests_total`` / ``proxyplane_http_request_seconds`` by route template, never by raw
  path (bounded: a scanner's 404s all count as route "unmatched").
- ``/metrics`` (Prometheus text), ``/livez`` and ``/readyz`` (health.py) on the API app, unless
  PROXYPLANE_METRICS_ON_API=false; ``metrics_part`` serves the same on PROXYPLANE_METRICS_PORT."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, generate_latest
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from proxyplane.platform import Platform
from proxyplane.storage.outage import FULL_RETRY_AFTER_SECONDS, RETRY_AFTER_SECONDS, is_outage, is_store_full

from . import health
from .logs import PLAIN, REQUEST_ID
from .metrics import HTTP_REQUESTS, HTTP_SECONDS
from .settings import ObservabilitySettings

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
ASGIApp = Callable[
    [Scope, Callable[[], Awaitable[Message]], Callable[[Message], Awaitable[None]]], Awaitable[None]
]
HEADER = b"x-request-id"
_SANE = re.compile(r"^[A-Za-z0-9._\-]{8,64}$")
access_log = logging.getLogger("proxyplane.access")
log = logging.getLogger(__name__)


def request_id(scope: Scope) -> str:
    for name, value in scope.get("headers", ()):
        if name == HEADER:
            text: str = value.decode("latin-1")
            if _SANE.match(text):
                return text
            break
    return uuid.uuid4().hex


def route_of(scope: Scope) -> str:
    """The matched route's path template; FastAPI routes leave it in the scope, plain Starlette routes
    (the OpenAPI document, the docs) only their endpoint, so those are looked up (only then)."""
    route = scope.get("route")
    if route is None and "endpoint" in scope:
        for candidate in getattr(getattr(scope.get("app"), "router", None), "routes", ()):
            if getattr(candidate, "endpoint", None) is scope["endpoint"]:
                route = candidate
                break
    path = getattr(route, "path", None)
    return str(path) if path else "unmatched"


class RequestMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(
        self,
        scope: Scope,
        receive: Callable[[], Awaitable[Message]],
        send: Callable[[Message], Awaitable[None]],
    ) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        rid = request_id(scope)
        token = REQUEST_ID.set(rid)
        status = 500
        start = time.perf_counter()

        started = False

        async def send_with_id(message: Message) -> None:
            nonlocal status, started
            if message["type"] == "http.response.start":
                status, started = int(message["status"]), True
                message = {**message, "headers": [*message.get("headers", ()), (HEADER, rid.encode())]}
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        except Exception as exc:
            if started:
                raise
            if is_store_full(exc):
                log.error("store full: %s %s answered 507 (%s)", scope.get("method"), route_of(scope), exc)
                status = 507
                await _unavailable(send_with_id, full=True)
            elif is_outage(exc):
                log.warning(
                    "store unreachable: %s %s answered 503 (%s)", scope.get("method"), route_of(scope), exc
                )
                status = 503
                await _unavailable(send_with_id)
            else:
                raise
        finally:
            seconds = time.perf_counter() - start
            route, method = route_of(scope), scope.get("method", "")
            request_done(method, route, status, seconds)
            if access_log.isEnabledFor(logging.INFO):
                access_log.handle(access_record(method, route, scope.get("path", ""), status, seconds))
            REQUEST_ID.reset(token)


async def _unavailable(send: Callable[[Message], Awaitable[None]], full: bool = False) -> None:
    """503 + Retry-After in the API's error shape: the store is unreachable, nothing was done; `full`: 507,
    the store's disk is full (the write was rolled back whole; reads still answer)."""
    if full:
        error, message = "insufficient_storage", "the platform's database disk is full; nothing was changed"
    else:
        error, message = "service_unavailable", "the platform's database is unreachable; nothing was changed"
    body = json.dumps({"error": error, "message": f"{message}, retry later"}).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"retry-after", str(FULL_RETRY_AFTER_SECONDS if full else RETRY_AFTER_SECONDS).encode()),
    ]
    await send({"type": "http.response.start", "status": 507 if full else 503, "headers": headers})
    await send({"type": "http.response.body", "body": body})


_SERIES: dict[tuple[str, str, int], tuple[Any, Any]] = {}


def request_done(method: str, route: str, status: int, seconds: float) -> None:
    """One count and one latency; the labelled series looked up once per (method, route, status): the
    labels are bounded (route templates, "unmatched"), so is this dict."""
    series = _SERIES.get((method, route, status))
    if series is None:
        series = HTTP_REQUESTS.labels(method, route, str(status)), HTTP_SECONDS.labels(method, route)
        _SERIES[(method, route, status)] = series
    series[0].inc()
    series[1].observe(seconds)


def access_record(method: str, route: str, path: str, status: int, seconds: float) -> logging.LogRecord:
    """The access line's record, built directly (no walk up the stack for the caller's file and line,
    which no formatter shows). A matched route's line holds only a route template, a method, a status
    and a duration: nothing to redact (logs.PLAIN); an unmatched one shows the raw path, redacted."""
    shown = route if route != "unmatched" else path
    milliseconds = seconds * 1000
    record = access_log.makeRecord(
        access_log.name,
        logging.INFO,
        __file__,
        0,
        "%s %s %s %.1fms",
        (method, shown, status, milliseconds),
        None,
        "RequestMiddleware",
        {"method": method, "route": shown, "status": status, "duration_ms": round(milliseconds, 1)},
    )
    if route != "unmatched":
        setattr(record, PLAIN, True)
    return record


def health_routes(platform: Platform) -> list[Route]:
    async def metrics(_: Request) -> Response:
        return Response(generate_latest(REGISTRY), media_type=CONTENT_TYPE_LATEST)

    async def livez(_: Request) -> Response:
        return PlainTextResponse("ok\n")

    async def readyz(_: Request) -> Response:
        reason = await health.not_ready(platform.db)
        if reason is None:
            return PlainTextResponse("ready\n")
        return PlainTextResponse(f"not ready: {reason}\n", status_code=503)

    return [
        Route("/metrics", metrics, methods=["GET"], include_in_schema=False),
        Route("/livez", livez, methods=["GET"], include_in_schema=False),
        Route("/readyz", readyz, methods=["GET"], include_in_schema=False),
    ]


def install(app: Any, platform: Platform, settings: ObservabilitySettings | None = None) -> None:
    """The request-id/metrics middleware, and /metrics, /livez, /readyz ahead of every other route."""
    if getattr(app.state, "observability", False):
        return
    app.state.observability = True
    settings = settings or ObservabilitySettings()
    app.add_middleware(RequestMiddleware)
    if settings.metrics_on_api:
        app.router.routes[:0] = health_routes(platform)


@contextlib.asynccontextmanager
async def metrics_part(
    platform: Platform, settings: ObservabilitySettings | None = None
) -> AsyncIterator[None]:
    """Lifespan part: /metrics, /livez, /readyz on PROXYPLANE_METRICS_HOST:METRICS_PORT (when set)."""
    from proxyplane.gateway.metrics_http import MetricsServer

    settings = settings or ObservabilitySettings()
    if settings.metrics_port < 0:
        yield
        return
    state: dict[str, str | None] = {"reason": "starting"}
    server = MetricsServer(settings.metrics_host, settings.metrics_port, lambda: state["reason"])

    async def refresh() -> None:  # the port's readiness is synchronous: keep the store check current
        while True:
            state["reason"] = await health.not_ready(platform.db)
            await asyncio.sleep(1.0)

    await server.start()
    task = asyncio.ensure_future(refresh())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task
        await server.close()
