"""Coarse timeouts for many connections: one periodic sweep instead of a timer per connection.

A connection that needs a timeout (SOCKS5 handshake, upstream connect, tunnel idle) puts itself in a
bucket keyed by the whole second it expires in; ``sweep()`` (run every ``interval`` seconds by the
gateway) calls ``expire()`` on everything in the buckets that are due. Adding and removing is a dict
lookup plus a set operation, far cheaper than creating and cancelling an event-loop timer per
connection. Timeouts fire up to one bucket width (1 s) plus one sweep interval late, never early.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Protocol

log = logging.getLogger(__name__)


class Expirable(Protocol):
    def expire(self) -> None: ...


class Deadlines:
    __slots__ = ("_buckets", "_clock")

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._buckets: dict[int, set[Expirable]] = {}
        self._clock = clock

    def add(self, obj: Expirable, timeout: float) -> int:
        """Call ``obj.expire()`` at a sweep ``timeout`` seconds or more from now; returns the bucket to
        pass to ``remove``."""
        slot = int(self._clock() + timeout) + 1  # the next whole second: never early
        bucket = self._buckets.get(slot)
        if bucket is None:
            self._buckets[slot] = {obj}
        else:
            bucket.add(obj)
        return slot

    def remove(self, obj: Expirable, slot: int) -> None:
        bucket = self._buckets.get(slot)
        if bucket is not None:
            bucket.discard(obj)

    def sweep(self) -> int:
        """Expire everything that is due; returns how many were expired."""
        now = self._clock()
        due = sorted(slot for slot in self._buckets if slot <= now)
        n = 0
        for slot in due:
            for obj in self._buckets.pop(slot):
                n += 1
                try:
                    obj.expire()
                except Exception:  # one broken connection must not stop the others' timeouts
                    log.exception("expire() failed for %r", obj)
        return n

    def __len__(self) -> int:
        return sum(len(b) for b in self._buckets.values())
