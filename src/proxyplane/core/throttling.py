"""The throttle policy: pure arithmetic shared by the database-backed throttle of the API processes
(domains/accounts/throttle.py over storage/repos/throttles.py) and the gateway's in-memory one per source
address (gateway/auth_throttle.py). No storage, no clock of its own: callers pass `now`.

Each key is a leaky bucket: every counted event (a wrong password, a sign-up) adds 1 to its level, the
level drains by one every `drain_seconds`, and an attempt is allowed while one more event fits under
`burst`. So a key is never locked: after its burst it gets one attempt per `drain_seconds`, and the
`retry_after` it reports is the exact wait until the next one fits (docs/decisions/throttling.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Policy:
    name: str  # the key's prefix in storage ("pw-acct-ip", "signup-ip", ...)
    burst: int  # events allowed back to back
    drain_seconds: float  # one event drains away every this many seconds (the sustained rate)
    reset_on_success: bool = False  # a success from this key empties it (the owner proved who they are)

    def drained(self, level: float, elapsed: float) -> float:
        """The level after `elapsed` seconds without events."""
        return max(0.0, level - max(0.0, elapsed) / self.drain_seconds)

    def wait(self, level: float) -> float:
        """Seconds until one more event fits (0.0: allowed now)."""
        return max(0.0, (level + 1.0 - self.burst) * self.drain_seconds)

    def empty_after(self, level: float) -> float:
        """Seconds until the bucket is empty (its row may then be purged)."""
        return level * self.drain_seconds


@dataclass(frozen=True)
class Decision:
    allowed: bool
    retry_after: float = 0.0  # seconds; > 0 only when refused
    key: str = ""  # the key that refused (for logs and tests)

    @property
    def retry_after_header(self) -> str:
        """The `Retry-After` value: whole seconds, at least 1."""
        return str(max(1, math.ceil(self.retry_after)))


ALLOWED = Decision(True)


def decide(levels: list[tuple[str, Policy, float]]) -> Decision:
    """Allowed when every (key, policy, current drained level) has room; else the longest wait."""
    worst = ALLOWED
    for key, policy, level in levels:
        wait = policy.wait(level)
        if wait > 0 and wait > worst.retry_after:
            worst = Decision(False, wait, key)
    return worst


class MemoryBuckets:
    """The same buckets in one process's memory (the gateway: fast, works while the store is down).
    Bounded: past `max_keys` the emptiest-looking oldest entries go first (an attacker spraying addresses
    cannot grow it without bound)."""

    def __init__(self, policy: Policy, max_keys: int = 100_000) -> None:
        self.policy = policy
        self.max_keys = max_keys
        self._state: dict[str, tuple[float, float]] = {}  # key -> (level, at)

    def level(self, key: str, now: float) -> float:
        state = self._state.get(key)
        return 0.0 if state is None else self.policy.drained(state[0], now - state[1])

    def check(self, key: str, now: float) -> Decision:
        return decide([(key, self.policy, self.level(key, now))])

    def record_failure(self, key: str, now: float) -> None:
        level = self.level(key, now) + 1.0
        self._state.pop(key, None)
        self._state[key] = (level, now)  # re-inserted: dict order is oldest-touched first
        if len(self._state) > self.max_keys:
            self._evict(now)

    def record_success(self, key: str) -> None:
        if self.policy.reset_on_success:
            self._state.pop(key, None)

    def _evict(self, now: float) -> None:
        for key in [k for k, (lv, at) in self._state.items() if self.policy.drained(lv, now - at) <= 0]:
            del self._state[key]
        target = self.max_keys * 9 // 10  # room for the next ones without a scan per failure
        while len(self._state) > target:
            del self._state[next(iter(self._state))]

    def __len__(self) -> int:
        return len(self._state)
