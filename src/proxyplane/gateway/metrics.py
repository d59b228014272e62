"""Gateway metrics (Prometheus, ``prometheus_client``) of one process: a worker of ``proxyplane gateway``
or the node inside ``proxyplane serve``. Served on the node's metrics port (metrics_http.py), never on a
customer-facing listener; inside ``serve`` the API's /metrics shows them (same process, same registry).

Counters move at the existing observation points: ``Context.error`` (every refusal and upstream error, by
reason), the meter (admitted connections, requests, bytes harvested from the tunnels' flows) and the usage
flush. Gauges read the live node at scrape time (``NodeCollector``). Labels are bounded: reasons and
categories are the fixed strings of the gateway code (auth_reasons.AuthFailure, upstream.py's categories,
capacity, blocked ...), never an IP, a login or a service id."""

from __future__ import annotations

import time
import weakref
from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client import REGISTRY, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from .auth_reasons import AuthFailure

AUTH_REASONS = frozenset(reason.value for reason in AuthFailure)
# upstream failures (upstream.py): the destination could not be reached from the exit IP
UPSTREAM_CATEGORIES = frozenset({"connect", "refused", "timeout", "dns", "no_ipv6"})  # no_ipv6: issue 16

CONNECTIONS = Counter(
    "proxyplane_gateway_connections_admitted", "Client connections admitted (authorised, within limits)"
)
REQUESTS = Counter(
    "proxyplane_gateway_requests", "Proxy requests (HTTP requests, CONNECT and SOCKS5 tunnels)"
)
REFUSED = Counter(
    "proxyplane_gateway_connections_refused",
    "Client connections or requests refused, by reason (auth reasons included)",
    ["reason"],
)
AUTH_FAILURES = Counter(
    "proxyplane_gateway_auth_failures", "Proxy login failures by reason (gateway/auth_reasons.py)", ["reason"]
)
UPSTREAM_ERRORS = Counter(
    "proxyplane_gateway_upstream_errors", "Destinations that could not be reached, by category", ["category"]
)
BYTES = Counter(
    "proxyplane_gateway_bytes", "Bytes relayed (up: client to destination, down: back)", ["direction"]
)
FLUSHES = Counter("proxyplane_gateway_usage_flushes", "Usage flushes to the store by outcome", ["outcome"])
FLUSH_ROWS = Counter("proxyplane_gateway_usage_rows_flushed", "Usage rows written to the store")
STICKY_SKIPPED = Counter(
    "proxyplane_gateway_sticky_sessions_skipped",
    "Sticky sessions not written to the store: their service id is neither a service's nor a sub-user's",
)
FLUSH_SECONDS = Histogram(
    "proxyplane_gateway_usage_flush_seconds",
    "Duration of one usage flush to the store",
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0),
)
CHANGE_LAG = Histogram(
    "proxyplane_gateway_change_lag_seconds",
    "Write -> applied lag of the newest change per poll that applied changes (database clock)",
    buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0),
)
POLL_SECONDS = Histogram(
    "proxyplane_gateway_store_poll_seconds",
    "Duration of one read of the change log (and reload of the changed services)",
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0),
)

_bytes_up, _bytes_down = BYTES.labels("up"), BYTES.labels("down")
_refused: dict[str, tuple[Any, ...]] = {}
_last_flush = time.time()


def error(reason: str) -> None:
    """One refusal or upstream error (``Context.error``); the labelled children are looked up once."""
    children = _refused.get(reason)
    if children is None:
        if reason in UPSTREAM_CATEGORIES:
            children = (UPSTREAM_ERRORS.labels(reason),)
        elif reason in AUTH_REASONS:
            children = (REFUSED.labels(reason), AUTH_FAILURES.labels(reason))
        else:
            children = (REFUSED.labels(reason),)
        _refused[reason] = children
    for child in children:
        child.inc()


def opened(requests: int, connections: int) -> None:
    if connections:
        CONNECTIONS.inc(connections)
    if requests:
        REQUESTS.inc(requests)


def relayed(up: int, down: int) -> None:
    if up:
        _bytes_up.inc(up)
    if down:
        _bytes_down.inc(down)


def flushed(ok: bool, rows: int, seconds: float) -> None:
    global _last_flush
    FLUSHES.labels("ok" if ok else "failed").inc()
    if rows or not ok:
        FLUSH_SECONDS.observe(seconds)
    if ok:
        FLUSH_ROWS.inc(rows)
        _last_flush = time.time()


class NodeCollector(Collector):
    """Gauges of the live gateways of this process, read at scrape time."""

    def __init__(self) -> None:
        self.sources: weakref.WeakSet[Any] = weakref.WeakSet()

    def collect(self) -> Iterator[GaugeMetricFamily]:
        sources = list(self.sources)
        values: dict[str, float] = {}
        for source in sources:
            for name, value in source.gauges().items():
                values[name] = values.get(name, 0.0) + value
        for name, help_text in GAUGES.items():
            if name in values or not sources:
                yield GaugeMetricFamily(f"proxyplane_gateway_{name}", help_text, value=values.get(name, 0.0))
        yield GaugeMetricFamily(
            "proxyplane_gateway_usage_flush_age_seconds",
            "Seconds since the last successful usage flush (unflushed usage is at most this old)",
            value=time.time() - _last_flush,
        )


GAUGES = {
    "active_tunnels": "Open tunnels and relayed flows (CONNECT, SOCKS5, UDP destinations)",
    "admitted_connections_open": "Admitted client connections holding a slot now",
    "access_table_services": "Services in the node's access table",
    "store_poll_age_seconds": "Seconds since the change log was last read (access table staleness)",
    "descriptor_budget": "Descriptors the node may use for connections (limit minus reserve)",
    "descriptors_charged": "Descriptors charged to admitted connections",
    "draining": "1 while the node drains (SIGTERM: listeners closed, open tunnels finishing)",
    "usage_spool_bytes": "Bytes of metered usage in the node's spool, not yet in the store",
    "usage_spool_files": "Usage batches in the node's spool, not yet in the store",
    "store_unreachable": "1 while the store refuses the node's usage writes (usage is spooled)",
    "quota_services": "Services with a traffic or request quota in the node's access table (issue 32)",
    "quota_data_age_seconds": "Seconds since the node last read the store's quota state (0: no quota)",
    "quota_data_stale": "1 while the node enforces quotas on data it could not refresh or report (store "
    "unreachable: it keeps refusing on what it knew and counts)",
}
COLLECTOR = NodeCollector()
REGISTRY.register(COLLECTOR)


def timed(poll: Callable[[], Any], stamp: Callable[[float], None]) -> Callable[[], Any]:
    """``poll`` (an async callable) timed into POLL_SECONDS; ``stamp(now)`` after each success."""

    async def run() -> Any:
        start = time.perf_counter()
        result = await poll()
        POLL_SECONDS.observe(time.perf_counter() - start)
        stamp(time.time())
        return result

    return run
