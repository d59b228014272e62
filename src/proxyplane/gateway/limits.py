"""Per-service concurrent-connection counting, shared by every listener of a gateway process; with
``others`` (the other gateway nodes' counts, refreshed by node_limits.py) the limit holds across nodes.

``WorkerLimiter`` is the same for one worker of a multi-process host (``proxyplane gateway --workers N``):
its counts live in the host's shared table (shared_counts.SharedCounts), so the check-and-increment is
exact across the host's workers; ``others`` are then the other hosts' counts."""

from __future__ import annotations

from .shared_counts import SharedCounts, StripedCounts


class ConnectionLimiter:
    def __init__(self) -> None:
        self._counts: dict[str, int] = {}
        self._others: dict[str, int] = {}  # open connections on the other gateway nodes, per service

    def set_others(self, others: dict[str, int]) -> None:
        self._others = others

    def acquire(self, service_id: str, limit: int) -> bool:
        """Take a slot; False when ``limit`` (> 0) slots are taken already. 0 means unlimited."""
        count = self._counts.get(service_id, 0)
        if limit > 0 and count + self._others.get(service_id, 0) >= limit:
            return False
        self._counts[service_id] = count + 1
        return True

    def release(self, service_id: str) -> None:
        count = self._counts.get(service_id, 0) - 1
        if count > 0:
            self._counts[service_id] = count
        else:
            self._counts.pop(service_id, None)

    def current(self, service_id: str) -> int:
        return self._counts.get(service_id, 0)

    def others(self, service_id: str) -> int:
        """Open connections of the service on the other gateway nodes, as last reported."""
        return self._others.get(service_id, 0)

    def snapshot(self) -> dict[str, int]:
        return dict(self._counts)


class WorkerLimiter(ConnectionLimiter):
    """The limiter of worker ``worker`` of host ``host_id``. Connections of a service with a limit are
    counted in the host's shared table (an exact check-and-increment across the workers, about 2 µs of
    lock per acquire and per release); those of an unlimited service (limit 0: nothing to enforce) are
    counted in this worker alone, without the lock. Should the shared table be full, a limited service is
    counted here too (logged once; its limit then holds per worker, not per host). ``snapshot`` is the
    host's shared counts plus this worker's own; node_limits.py publishes worker 0's once per host as the
    row ``host_id``. ``report()`` copies this worker's admitted/open counts to the host's status."""

    def __init__(self, shared: SharedCounts | StripedCounts, worker: int, host_id: str) -> None:
        super().__init__()
        self.shared, self.worker, self.host_id = shared, worker, host_id
        self.admitted = 0
        self.open = 0

    def acquire(self, service_id: str, limit: int) -> bool:
        taken: bool | None = None
        if limit > 0 and service_id not in self._counts:  # the shared table decides
            taken = self.shared.acquire(service_id, self.worker, limit, self._others.get(service_id, 0))
        if taken is None:  # unlimited, counted here already, or the table is full
            taken = super().acquire(service_id, limit)
        if taken:
            self.admitted += 1
            self.open += 1
        return taken

    def release(self, service_id: str) -> None:
        if service_id in self._counts:
            super().release(service_id)
            self.open -= 1
        elif self.shared.release(service_id, self.worker):
            self.open -= 1

    def current(self, service_id: str) -> int:
        return self.shared.total(service_id) + self._counts.get(service_id, 0)

    def snapshot(self) -> dict[str, int]:
        counts = self.shared.snapshot()
        for service_id, n in self._counts.items():
            counts[service_id] = counts.get(service_id, 0) + n
        return counts

    def report(self) -> None:
        stats = self.shared.stats
        if stats is not None:
            stats.set_counts(self.worker, self.admitted, self.open)
