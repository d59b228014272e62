"""The node's descriptor budget: one customer can never take the gateway down for everyone.

Every admitted connection (a service's connection slot, taken on both tunnel paths right after the plan's
connection limit and before any upstream descriptor is spent) is charged ``PER_CONNECTION`` descriptors
(client + upstream). A connection is admitted only while

- the node stays within its budget: ``base + charged + cost <= limit - reserve``, where ``limit`` is the
  soft RLIMIT_NOFILE, ``reserve`` descriptors are kept back (default: max(64, limit / 20)) so the node can
  still accept, answer and shed, keep its store connections and pooled upstreams, and ``base`` is what the
  process holds besides its charged connections (listeners, store, pooled upstreams, connections still
  in their handshake), recounted from /proc/self/fd at ``refresh`` (the sweep, once a second, while the
  node holds half its budget or more; every 30 s below that: a count costs ~3 µs per descriptor);
- the service stays within its share: ``charged[service] + cost <= share * (limit - reserve)`` (default
  share 0.5): one service can never hold more than that, whatever its plan allows.

A refused connection gets a clear error (HTTP 503 with the reason, SOCKS5 general failure), counted as the
error category ``capacity`` of its service; the log says so once per cause per ``LOG_EVERY`` seconds with
the number shed since the last line, never once per connection. Established tunnels are never cut: shedding
only ever refuses new connections, and admission resumes as soon as load leaves.
"""

from __future__ import annotations

import logging
import os
import resource
import time

log = logging.getLogger(__name__)

PER_CONNECTION = 2  # the client socket and the upstream socket
LOG_EVERY = 10.0  # seconds between two log lines of one cause
RECOUNT = 30.0  # seconds between two descriptor counts while far from the budget


def open_descriptors() -> int | None:
    """Descriptors this process holds (None where /proc is not available)."""
    try:  # scandir: one entry at a time (a listdir of 20,000 names would grow the heap for good)
        with os.scandir("/proc/self/fd") as entries:
            return sum(1 for _ in entries) - 1  # minus the descriptor scandir itself holds
    except OSError:
        return None


def soft_limit() -> int:
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    return soft if soft != resource.RLIM_INFINITY else 1 << 20


class Capacity:
    def __init__(self, reserve: int = 0, share: float = 0.5) -> None:
        """``reserve``: descriptors kept back (0: max(64, limit / 20)); ``share``: the fraction of the
        budget one service may hold (0 < share <= 1)."""
        self.reserve_setting = reserve
        self.share = min(max(share, 0.0), 1.0) or 0.5
        self.charged: dict[str, int] = {}
        self.total = 0
        self.base = 0
        self.limit = 0
        self.reserve = 0
        self.budget = 0  # limit - reserve
        self.service_cap = 0  # share * budget
        self.shed: dict[str, int] = {"node": 0, "service": 0}  # refused since the last log line, per cause
        self.shed_total: dict[str, int] = {"node": 0, "service": 0}
        self._logged: dict[str, float] = {}
        self._last_service = ""
        self._counted = -RECOUNT  # when /proc/self/fd was last counted
        self.refresh()

    def refresh(self) -> None:
        """Re-read the descriptor limit and recount what the process holds besides charged connections
        (the gateway's sweeper calls this once a second); logs what was shed since the last line."""
        self.limit = soft_limit()
        self.reserve = self.reserve_setting or max(64, self.limit // 20)
        self.budget = max(self.limit - self.reserve, 0)
        self.service_cap = int(self.budget * self.share)
        now = time.monotonic()
        # counting costs ~3 µs per descriptor: every sweep near the budget, else every RECOUNT seconds
        if self.base + self.total >= self.budget // 2 or now - self._counted >= RECOUNT:
            held = open_descriptors()
            if held is not None:
                self.base = max(held - self.total, 0)
            self._counted = now
        self._log(now)

    def acquire(self, service_id: str) -> bool:
        """Charge one connection of ``service_id``; False (nothing charged) when that would exceed the
        node's budget or the service's share."""
        charged = self.charged.get(service_id, 0)
        if charged + PER_CONNECTION > self.service_cap:
            self._refuse("service", service_id)
            return False
        if self.base + self.total + PER_CONNECTION > self.budget:
            self._refuse("node", service_id)
            return False
        self.charged[service_id] = charged + PER_CONNECTION
        self.total += PER_CONNECTION
        return True

    def release(self, service_id: str) -> None:
        charged = self.charged.get(service_id, 0)
        if charged <= 0:
            return
        if charged > PER_CONNECTION:
            self.charged[service_id] = charged - PER_CONNECTION
        else:
            del self.charged[service_id]
        self.total -= PER_CONNECTION

    def connections(self, service_id: str) -> int:
        return self.charged.get(service_id, 0) // PER_CONNECTION

    def status(self) -> dict[str, int]:
        return {"limit": self.limit, "reserve": self.reserve, "budget": self.budget, "base": self.base,
                "charged": self.total, "service_cap": self.service_cap,
                "shed_node": self.shed_total["node"], "shed_service": self.shed_total["service"]}

    def reason(self, service_id: str) -> str:
        """The refusal message for a client of ``service_id``."""
        if self.charged.get(service_id, 0) + PER_CONNECTION > self.service_cap:
            return "gateway at capacity: this service holds its share of the node's connections"
        return "gateway at capacity: no connection can be opened now"

    def _refuse(self, cause: str, service_id: str) -> None:
        self.shed[cause] += 1
        self.shed_total[cause] += 1
        self._last_service = service_id
        self._log(time.monotonic())

    def _log(self, now: float) -> None:
        for cause, count in self.shed.items():
            if not count or now - self._logged.get(cause, -LOG_EVERY) < LOG_EVERY:
                continue
            self._logged[cause] = now
            self.shed[cause] = 0
            if cause == "service":
                log.warning("shed %d connection(s): a service reached its share of the descriptor budget "
                            "(%d of %d descriptors per service; last: %s)", count, self.service_cap,
                            self.budget, self._last_service)
            else:
                log.warning("shed %d connection(s): the node reached its descriptor budget (%d held of "
                            "%d, %d kept in reserve of the limit %d)", count, self.base + self.total,
                            self.budget, self.reserve, self.limit)
