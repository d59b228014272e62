"""Control-plane metrics (Prometheus, ``prometheus_client``'s default registry): HTTP requests per route and
status (http.py), operations per operation, channel and outcome (``observed`` wraps the registry's
``invoke``: REST, MCP, legacy and dashboard alike), MCP tool calls, webhook deliveries and their lag, renewal
runs. Labels are bounded: route templates, operation names, channels, error codes (core.errors), outcomes;
never a customer, a key or an IP."""

from __future__ import annotations

import functools
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from prometheus_client import Counter, Gauge, Histogram

from proxyplane.core.errors import DomainError

LATENCY = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
HTTP_REQUESTS = Counter(
    "proxyplane_http_requests",
    "HTTP requests by method, route template and status",
    ["method", "route", "status"],
)
HTTP_SECONDS = Histogram(
    "proxyplane_http_request_seconds",
    "HTTP request latency by method and route",
    ["method", "route"],
    buckets=LATENCY,
)
OPERATIONS = Counter(
    "proxyplane_operations",
    "Registry operations by name, channel (rest, mcp, legacy, web) and outcome (ok or the error code)",
    ["operation", "channel", "outcome"],
)
OPERATION_SECONDS = Histogram(
    "proxyplane_operation_seconds", "Registry operation latency", ["operation", "channel"], buckets=LATENCY
)
MCP_TOOL_CALLS = Counter(
    "proxyplane_mcp_tool_calls", "MCP tool calls by tool and outcome", ["tool", "outcome"]
)
WEBHOOK_DELIVERIES = Counter(
    "proxyplane_webhook_deliveries",
    "Webhook delivery attempts by outcome (succeeded, retry, failed: given up)",
    ["outcome"],
)
WEBHOOK_LAG = Histogram(
    "proxyplane_webhook_delivery_lag_seconds",
    "Seconds from the event to a delivery attempt's result",
    buckets=(0.1, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0, 21600.0, 86400.0),
)
RENEWAL_RUNS = Counter("proxyplane_renewal_runs", "Renewal job passes by outcome (ok, failed)", ["outcome"])
RENEWAL_SERVICES = Counter(
    "proxyplane_renewal_services",
    "Services a renewal pass acted on, by action (renewed, resumed, suspended, terminated, expired, short)",
    ["action"],
)
RENEWAL_LAST = Gauge(
    "proxyplane_renewal_last_success_timestamp_seconds", "When a renewal pass last succeeded"
)

T = TypeVar("T")


def outcome_of(exc: BaseException) -> str:
    return exc.code if isinstance(exc, DomainError) else "internal_error"


def operation_done(name: str, channel: str, outcome: str, seconds: float) -> None:
    OPERATIONS.labels(name, channel, outcome).inc()
    OPERATION_SECONDS.labels(name, channel).observe(seconds)
    if channel == "mcp":
        MCP_TOOL_CALLS.labels(name, outcome).inc()


def observed(invoke: Callable[..., Awaitable[T]]) -> Callable[..., Awaitable[T]]:
    """Wrap ``invoke(platform, op, caller, data, ...)``: one count and one latency per call."""

    @functools.wraps(invoke)
    async def wrapper(platform: Any, op: Any, caller: Any, *args: Any, **kwargs: Any) -> T:
        start = time.perf_counter()
        channel = str(getattr(caller, "channel", "") or "unknown")
        try:
            result = await invoke(platform, op, caller, *args, **kwargs)
        except BaseException as exc:
            operation_done(op.name, channel, outcome_of(exc), time.perf_counter() - start)
            raise
        operation_done(op.name, channel, "ok", time.perf_counter() - start)
        return result

    return wrapper


def webhook_attempt(outcome: str, lag_seconds: float) -> None:
    WEBHOOK_DELIVERIES.labels(outcome).inc()
    WEBHOOK_LAG.observe(max(lag_seconds, 0.0))


def renewal_run(report: Any | None) -> None:
    """One renewal pass: ``report`` (domains.renewals PassReport) or None when it failed."""
    if report is None:
        RENEWAL_RUNS.labels("failed").inc()
        return
    RENEWAL_RUNS.labels("ok").inc()
    RENEWAL_LAST.set_to_current_time()
    for action in ("renewed", "resumed", "suspended", "terminated", "expired", "short"):
        count = len(getattr(report, action, ()) or ())
        if count:
            RENEWAL_SERVICES.labels(action).inc(count)
