"""Speed limits (issue 32.6): a service's bytes/s cap, one token bucket per service (the flow group: all
its tunnels on this process, both directions together, its sub-users' too).

A sub-user may have a cap of its own (``service_subusers.speed_limit_bps``: its derived entry's
``speed_bps``); its flows then take from its bucket and from its service's (``Both``).

A service with ``speed_bps`` (``ServiceEntry``, from ``parameters["speed_limit_bps"]``) is relayed by the
Python relay (relay.py), also when the C engine accepted it: the engine's tunnel is detached after its
decisions (slot, flow, exit IP) and relayed in Python (speed_handoff.py), so the engine's own relay
loop, which unlimited services use, has no check at all. In the relay, every chunk read takes its size
from the bucket; a bucket in debt pauses that side's reading for debt / rate seconds. Plain HTTP requests
(http_forward.py, Python on both paths) take from the same bucket: a response's bytes written to the client
pause the upstream's reading, a request body's pause the client's. The bucket holds
at most BURST_SECONDS of the rate, so a transfer averages the rate within that burst over its duration.

The cap holds per process: a service served by N nodes (or workers) at once may move up to N x the
rate (stated in docs/decisions/metered-traffic.md).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .access import ServiceEntry

BURST_SECONDS = 0.05  # the bucket's depth in seconds of the rate
MIN_BURST = 16 * 1024


def limit_of(params: Mapping[str, object]) -> int:
    """The bytes/s cap of a service's parameters (domains/connections/speed.py writes it); 0: none."""
    value = params.get("speed_limit_bps")
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


class Both:
    """A sub-user with a cap of its own under a capped service: each chunk takes from both buckets."""

    __slots__ = ("own", "service")

    def __init__(self, own: Bucket, service: Bucket) -> None:
        self.own, self.service = own, service

    def take(self, n: int) -> float:
        return max(self.own.take(n), self.service.take(n))


class Bucket:
    __slots__ = ("rate", "depth", "tokens", "stamp", "clock")

    def __init__(self, rate: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.rate, self.clock = rate, clock
        self.depth = max(MIN_BURST, rate * BURST_SECONDS)
        self.tokens = self.depth
        self.stamp = clock()

    def take(self, n: int) -> float:
        """Take ``n`` bytes; the seconds the taker should wait before reading again (0: none)."""
        now = self.clock()
        self.tokens = min(self.depth, self.tokens + (now - self.stamp) * self.rate) - n
        self.stamp = now
        return 0.0 if self.tokens >= 0 else -self.tokens / self.rate


class SpeedLimits:
    """The buckets of this process, by service id or sub-user metering id (a rate change gives a new
    bucket)."""

    def __init__(self) -> None:
        self._buckets: dict[str, Bucket] = {}

    def for_entry(self, entry: ServiceEntry | None) -> Bucket | Both | None:
        """What a flow of ``entry`` takes from: its service's bucket, a sub-user's own, or both."""
        if entry is None:
            return None
        own = self.bucket(entry.service_id, entry.speed_bps) if entry.speed_bps else None
        parent = entry.parent
        if parent is None or not parent.speed_bps:
            return own
        service = self.bucket(parent.service_id, parent.speed_bps)
        return service if own is None else Both(own, service)

    def bucket(self, service_id: str, rate: int) -> Bucket:
        found = self._buckets.get(service_id)
        if found is None or found.rate != rate:
            found = self._buckets[service_id] = Bucket(rate)
        return found


def throttle_http(conn: Any, transport: asyncio.Transport, delay: float) -> None:
    """A plain HTTP request's response (http_forward.py): pause reading its upstream ``transport`` for
    ``delay`` seconds (``conn.speed_held`` meanwhile); resumed unless the client's writes are paused or
    the connection moved to another upstream."""
    conn.speed_held = True
    transport.pause_reading()

    def resume() -> None:
        conn.speed_held = False
        up = conn.upstream
        if transport.is_closing() or conn.write_paused or up is None or up.transport is not transport:
            return
        transport.resume_reading()

    asyncio.get_running_loop().call_later(delay, resume)


def throttle(transport: asyncio.Transport, delay: float, end: Any) -> None:
    """Pause reading ``transport`` for ``delay`` seconds (``end.held`` meanwhile: backpressure's
    resume leaves it paused)."""
    end.held = True
    transport.pause_reading()

    def resume() -> None:
        end.held = False
        if not transport.is_closing() and not getattr(end, "backpressured", False):
            transport.resume_reading()

    asyncio.get_running_loop().call_later(delay, resume)
