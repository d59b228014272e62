"""Per-service concurrent-connection counting, shared by every listener of a gateway process."""

from __future__ import annotations


class ConnectionLimiter:
    def __init__(self) -> None:
        self._counts: dict[str, int] = {}

    def acquire(self, service_id: str, limit: int) -> bool:
        """Take a slot; False when ``limit`` (> 0) slots are taken already. 0 means unlimited."""
        count = self._counts.get(service_id, 0)
        if 0 < limit <= count:
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

    def snapshot(self) -> dict[str, int]:
        return dict(self._counts)
