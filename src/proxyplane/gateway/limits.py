"""Per-service concurrent-connection counting, shared by every listener of a gateway process; with
``others`` (the other gateway nodes' counts, refreshed by node_limits.py) the limit holds across nodes."""

from __future__ import annotations


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
