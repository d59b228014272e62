"""Usage metering: per service, per minute, per destination host, held in memory and flushed in batches.

Counters are keyed ``(service_id, minute, host)``; a row's totals summed over hosts give the minute's
totals, so a per-destination export always sums to the usage totals. Tunnels report bytes through a
``Flow`` (plain attribute increments on the hot path); ``harvest()`` moves flow deltas into the current
minute and runs at every flush, every second in ``run()``, and when a flow closes.

An upstream supplier's counts (issue 36.4: the cost side of the margin report) are rows too, under the
metering id ``"upstream:<upstream id>"`` with host "" (``supplier``): bytes both ways, ``connections`` the
tunnels opened, ``errors["failed"]`` the attempts that failed. So they ride the same spool batches as the
customers' usage (on disk first, applied once, replayed after an outage) and the usage sink writes them to
``upstream_usage`` (``supplier_rows``); no service, quota or Prometheus counter ever sees them.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from . import metrics

log = logging.getLogger(__name__)


@dataclass(slots=True)
class UsageRow:
    service_id: str
    minute: datetime  # UTC, start of the minute
    host: str  # destination host ("" when the error happened before a destination was known)
    requests: int = 0
    connections: int = 0
    bytes_up: int = 0  # client -> destination
    bytes_down: int = 0  # destination -> client
    errors: dict[str, int] = field(default_factory=dict)
    # upstream failures by (exit IP, category): also counted in ``errors``; see ``Meter.exit_error``
    exit_errors: dict[tuple[str, str], int] = field(default_factory=dict)

    def merge(self, other: UsageRow) -> None:
        self.requests += other.requests
        self.connections += other.connections
        self.bytes_up += other.bytes_up
        self.bytes_down += other.bytes_down
        for key, n in other.errors.items():
            self.errors[key] = self.errors.get(key, 0) + n
        for pair, n in other.exit_errors.items():
            self.exit_errors[pair] = self.exit_errors.get(pair, 0) + n


UsageSink = Callable[[list[UsageRow]], Awaitable[None]]
SUPPLIER = "upstream:"  # the metering id prefix of an upstream supplier's rows
SUPPLIER_FAILED = "failed"
# seconds a flush cancelled while its sink writes (a shutdown) waits for that write's outcome: a spool file
# takes milliseconds; a write still running after this is cancelled and its rows kept
CANCELLED_WRITE_GRACE = 10.0


def supplier_rows(rows: list[UsageRow]) -> tuple[list[UsageRow], list[UsageRow]]:
    """(the services' rows, the upstream suppliers' rows) of a batch."""
    services: list[UsageRow] = []
    suppliers: list[UsageRow] = []
    for row in rows:
        (suppliers if row.service_id.startswith(SUPPLIER) else services).append(row)
    return services, suppliers


class Flow:
    """Counters of one tunnel (or one UDP destination): plain attribute increments on the hot path,
    moved into the minute rows by ``Meter.harvest`` / ``Meter.close_flow``. The request and connection
    counts a tunnel opens with ride along, so opening a tunnel touches no row at all. ``cut``, set by the
    tunnel while it relays, ends it (a sub-user over its traffic limit: gateway/subusers.cut_refused)."""

    __slots__ = (
        "service_id", "host", "up", "down", "requests", "connections", "_up_seen", "_down_seen", "cut"
    )

    def __init__(self, service_id: str, host: str, requests: int = 0, connections: int = 0) -> None:
        self.service_id = service_id
        self.host = host
        self.up = 0
        self.down = 0
        self.requests = requests
        self.connections = connections
        self._up_seen = 0
        self._down_seen = 0
        self.cut: Callable[[], None] | None = None

    def take_delta(self) -> tuple[int, int]:
        up, down = self.up - self._up_seen, self.down - self._down_seen
        self._up_seen, self._down_seen = self.up, self.down
        return up, down


class Meter:
    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._rows: dict[tuple[str, int, str], UsageRow] = {}
        self._flows: set[Flow] = set()
        self._sub_flows: set[Flow] = set()  # the sub-users' among them
        self._sources: list[Callable[[], None]] = []
        self._checks: list[Callable[[], None]] = []
        # per sub-user metering id ("<service>/<pk>", gateway/subusers.py): [bytes, requests] counted and
        # [bytes, requests] flushed by this node since it started; shared with the access table (Context)
        # for the sub-users' traffic limits between flushes
        self.sub_counts: dict[str, list[int]] = {}

    def _sub(self, metering_id: str, nbytes: int, requests: int) -> None:
        counts = self.sub_counts.get(metering_id)
        if counts is None:
            counts = self.sub_counts[metering_id] = [0, 0, 0, 0]
        counts[0] += nbytes
        counts[1] += requests
        if "/" in metering_id:  # a sub-user's traffic counts for its service's quota too (quotas.py)
            parent = self.sub_counts.get(metering_id.partition("/")[0])
            if parent is not None:
                parent[0] += nbytes
                parent[1] += requests

    def add_source(self, source: Callable[[], None]) -> None:
        """``source()`` runs before every harvest: it brings flow counters kept elsewhere (the C tunnel
        engine's byte counts) up to date."""
        self._sources.append(source)

    def add_check(self, check: Callable[[], None]) -> None:
        """``check()`` runs after every harvest (every second and at each flush), when the counts are fresh:
        it may cut open tunnels (``Flow.cut``)."""
        self._checks.append(check)

    def subuser_flows(self) -> list[Flow]:
        """The open flows of sub-users (metering id "<service>/<pk>"), kept apart so that the check after
        each harvest costs nothing for services' tunnels."""
        return list(self._sub_flows)

    def _row(self, service_id: str, host: str) -> UsageRow:
        minute = int(self._clock() // 60)
        key = (service_id, minute, host)
        row = self._rows.get(key)
        if row is None:
            row = self._rows[key] = UsageRow(service_id, datetime.fromtimestamp(minute * 60, UTC), host)
        return row

    def record(self, service_id: str, host: str, *, requests: int = 0, connections: int = 0,
               bytes_up: int = 0, bytes_down: int = 0, error: str | None = None) -> None:
        row = self._row(service_id, host)
        row.requests += requests
        row.connections += connections
        row.bytes_up += bytes_up
        row.bytes_down += bytes_down
        metrics.opened(requests, connections)
        metrics.relayed(bytes_up, bytes_down)
        if "/" in service_id or service_id in self.sub_counts:  # a sub-user, a service with a quota
            self._sub(service_id, bytes_up + bytes_down, requests)
        if error is not None:
            row.errors[error] = row.errors.get(error, 0) + 1

    def exit_error(self, service_id: str, host: str, exit_ip: str, category: str) -> None:
        """An upstream failure (connect error, refused, timeout) from ``exit_ip``: one error of
        ``category`` for the service and host, also attributed to the exit IP."""
        row = self._row(service_id, host)
        row.errors[category] = row.errors.get(category, 0) + 1
        pair = (exit_ip, category)
        row.exit_errors[pair] = row.exit_errors.get(pair, 0) + 1

    def supplier(self, upstream_id: str, *, up: int = 0, down: int = 0, tunnels: int = 0,
                 failed: int = 0) -> None:
        """Bytes relayed through, tunnels opened by and failed attempts on an upstream supplier."""
        row = self._row(SUPPLIER + upstream_id, "")
        row.bytes_up += up
        row.bytes_down += down
        row.connections += tunnels
        if failed:
            row.errors[SUPPLIER_FAILED] = row.errors.get(SUPPLIER_FAILED, 0) + failed

    def open_flow(self, service_id: str, host: str, *, requests: int = 0, connections: int = 0) -> Flow:
        flow = Flow(service_id, host, requests, connections)
        self._flows.add(flow)
        if "/" in service_id or service_id in self.sub_counts:  # a sub-user, a service with a quota
            self._sub_flows.add(flow)
        return flow

    def is_open(self, flow: Flow) -> bool:
        return flow in self._flows

    def close_flow(self, flow: Flow) -> None:
        self._harvest_one(flow)
        self._flows.discard(flow)
        self._sub_flows.discard(flow)

    def _harvest_one(self, flow: Flow) -> None:
        up, down = flow.take_delta()
        requests, connections = flow.requests, flow.connections
        if up or down or requests or connections:
            flow.requests = flow.connections = 0
            row = self._row(flow.service_id, flow.host)
            row.bytes_up += up
            row.bytes_down += down
            row.requests += requests
            row.connections += connections
            metrics.opened(requests, connections)
            metrics.relayed(up, down)
            sid = flow.service_id
            if "/" in sid or sid in self.sub_counts:  # a sub-user, a service with a quota
                self._sub(sid, up + down, requests)

    def harvest(self) -> None:
        for source in self._sources:
            source()
        for flow in list(self._flows):
            self._harvest_one(flow)
        for check in self._checks:
            check()

    def drain(self) -> list[UsageRow]:
        """Everything counted so far (flows harvested), removed from the meter."""
        self.harvest()
        rows = list(self._rows.values())
        self._rows = {}
        return rows

    def restore(self, rows: list[UsageRow]) -> None:
        """Put rows back (a failed flush) so they go out with the next one."""
        for row in rows:
            key = (row.service_id, int(row.minute.timestamp()) // 60, row.host)
            existing = self._rows.get(key)
            if existing is None:
                self._rows[key] = row
            else:
                existing.merge(row)

    async def flush(self, sink: UsageSink) -> int:
        """Send all pending rows to ``sink`` in one batch; on failure they are kept for the next try."""
        rows = self.drain()
        if not rows:
            metrics.flushed(True, 0, 0.0)
            return 0
        start = time.perf_counter()
        write = asyncio.ensure_future(sink(rows))
        try:
            await asyncio.shield(write)
        except asyncio.CancelledError:
            # cancelled mid-write (a shutdown: Meter.run's task): the write goes on, and its outcome says
            # whether the rows are kept; restoring rows a sink took anyway counted them twice
            try:
                await asyncio.wait([write], timeout=CANCELLED_WRITE_GRACE)
            finally:
                if not write.done():
                    write.cancel()
                self._written(sink, rows, write, start)
            raise
        except BaseException:
            self._written(sink, rows, write, start)
            raise
        self._written(sink, rows, write, start)
        return len(rows)

    def _written(
        self, sink: UsageSink, rows: list[UsageRow], write: asyncio.Future[None], start: float
    ) -> None:
        """The end of a flush's write: the rows kept for the next flush unless the sink took them."""
        if not write.done() or write.cancelled() or write.exception() is not None:
            self.restore(rows)
            metrics.flushed(False, 0, time.perf_counter() - start)
            return
        metrics.flushed(True, len(rows), time.perf_counter() - start)
        if not getattr(sink, "defers_flush_marks", False):  # a spool marks them once in the store
            self.mark_flushed(rows)

    def mark_flushed(self, rows: list[UsageRow]) -> None:
        """These rows of this meter are in the store now (its totals, loaded with an entry, include them)."""
        sub_counts = self.sub_counts
        for row in rows:
            sid = row.service_id
            counts = sub_counts.get(sid)
            if counts is not None:
                counts[2] += row.bytes_up + row.bytes_down
                counts[3] += row.requests
            if "/" in sid:  # and its service's quota counters (quotas.py)
                parent = sub_counts.get(sid.partition("/")[0])
                if parent is not None:
                    parent[2] += row.bytes_up + row.bytes_down
                    parent[3] += row.requests

    async def run(self, sink: UsageSink, interval: float = 5.0) -> None:
        """Harvest every second and flush every ``interval`` seconds until cancelled (then flush once)."""
        last = time.monotonic()
        try:
            while True:
                await asyncio.sleep(1.0)
                if time.monotonic() - last >= interval:
                    last = time.monotonic()
                    try:
                        await self.flush(sink)  # harvests first (drain)
                    except Exception:
                        log.exception("usage flush failed; rows kept for the next flush")
                else:
                    self.harvest()
        finally:
            try:
                await self.flush(sink)
            except Exception:
                log.exception("final usage flush failed")
