"""Memory shared by the worker processes of one gateway host (``proxyplane gateway --workers N``).

The supervisor (workers.py) creates one anonymous region before it forks: a memfd mapped MAP_SHARED, so
every worker (and a restarted one) sees the same bytes. Each table in it has its own cross-process lock,
a POSIX record lock (``lockf``) on one byte of the memfd: about 2 µs for a lock/unlock pair, and the kernel
releases it when its holder dies (a killed worker cannot wedge the others). Critical sections are short,
synchronous Python (no await inside), so one lock per table is enough.

``SharedCounts`` holds the open connections per service of the whole host: an open-addressing table
(linear probing, deletion by backward shift, so no tombstones) keyed by the service id, with the host
total and one column per worker. ``acquire`` is an exact check-and-increment across workers; when a worker
dies, the supervisor subtracts its column (``drop_worker``), so its slots do not leak. An entry is deleted
when its total falls to 0: the table holds only the services with open connections on this host
(``capacity`` is the bound on that; a full table admits without the cross-worker check and logs once).

``StripedCounts`` splits that table into stripes (16 by default), each with its own lock, by a hash of
the service id: one service's limit is still one check under one lock, different services mostly do not
wait for each other.

``WorkerStats``: per worker pid, start time, restarts, admitted and open connections (the status file;
the counts are copied there by each worker about once a second, see limits.WorkerLimiter.report).
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import mmap
import os
import struct
import zlib
from collections.abc import Iterator

log = logging.getLogger(__name__)

KEY_SIZE = 48  # the service id, utf-8, zero-padded (longer ids: a digest, see _key)
_U32 = struct.Struct("<I")


class SharedRegion:
    """An anonymous shared mapping (memfd) with byte-range locks; create it before forking."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.fd = os.memfd_create("proxyplane-gateway", os.MFD_CLOEXEC)
        os.ftruncate(self.fd, size)
        self.mm = mmap.mmap(self.fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        self._next = 0
        self._next_lock = 0

    def take(self, size: int) -> int:
        """Reserve ``size`` bytes (8-aligned); the offset."""
        offset = self._next
        self._next += (size + 7) & ~7
        if self._next > self.size:
            raise ValueError("shared region too small")
        return offset

    def new_lock(self) -> RegionLock:
        self._next_lock += 1
        return RegionLock(self.fd, self._next_lock)

    def close(self) -> None:
        with contextlib.suppress(BufferError, ValueError):
            self.mm.close()
        with contextlib.suppress(OSError):
            os.close(self.fd)


class RegionLock:
    """A cross-process lock: an exclusive POSIX record lock on byte ``index`` of the region's file.
    POSIX locks belong to a process: not reentrant within one (never nest two uses of one lock)."""

    def __init__(self, fd: int, index: int) -> None:
        self.fd, self.index = fd, index

    def __enter__(self) -> None:
        fcntl.lockf(self.fd, fcntl.LOCK_EX, 1, self.index)

    def __exit__(self, *_: object) -> None:
        fcntl.lockf(self.fd, fcntl.LOCK_UN, 1, self.index)


def _key(service_id: str) -> bytes:
    raw = service_id.encode()
    if not raw or len(raw) >= KEY_SIZE or b"\0" in raw:
        raw = b"#" + zlib.crc32(raw).to_bytes(4, "big").hex().encode() + raw[-(KEY_SIZE - 10) :]
    return raw.ljust(KEY_SIZE, b"\0")


def _home(key: bytes, mask: int) -> int:
    return zlib.crc32(key) & mask


class WorkerStats:
    """Per worker: pid, restarts (u32), start time (f64), admitted and open connections (i64), the time
    it began to serve (f64, 0 until its listeners are open)."""

    FMT = struct.Struct("<IIdqqd")

    def __init__(self, region: SharedRegion, workers: int) -> None:
        self.mm, self.workers = region.mm, workers
        self.base = region.take(self.FMT.size * workers)

    def _off(self, worker: int) -> int:
        return self.base + self.FMT.size * worker

    def set_started(self, worker: int, pid: int, started: float, restarts: int) -> None:
        self.FMT.pack_into(self.mm, self._off(worker), pid, restarts, started, 0, 0, 0.0)

    def set_serving(self, worker: int, since: float) -> None:
        struct.pack_into("<d", self.mm, self._off(worker) + 32, since)

    def set_counts(self, worker: int, admitted: int, opened: int) -> None:
        """Written by the worker itself (its own row: no lock), about once a second."""
        struct.pack_into("<qq", self.mm, self._off(worker) + 16, admitted, opened)

    def get(self, worker: int) -> dict[str, float | int]:
        pid, restarts, started, admitted, opened, serving = self.FMT.unpack_from(self.mm, self._off(worker))
        return {
            "worker": worker,
            "pid": pid,
            "restarts": restarts,
            "started": started,
            "serving": serving,
            "admitted": admitted,
            "open": opened,
        }


class SharedCounts:
    """Open connections per service across the workers of one host (see the module docstring)."""

    def __init__(
        self, region: SharedRegion, workers: int, capacity: int = 1 << 16, stats: WorkerStats | None = None
    ) -> None:
        if capacity & (capacity - 1):
            raise ValueError("capacity must be a power of two")
        self.mm, self.workers, self.capacity, self.mask = region.mm, workers, capacity, capacity - 1
        self.stats = stats
        self.lock = region.new_lock()
        self.row = struct.Struct(f"<{KEY_SIZE}sI{workers}I")  # key, host total, per-worker counts
        self.slot = (self.row.size + 7) & ~7
        self.head = region.take(8)  # used slots
        self.base = region.take(self.slot * capacity)
        self.limit_used = capacity - capacity // 8  # keep probes short: at most 7/8 full
        self._keys: dict[str, tuple[bytes, int]] = {}
        self._full_logged = False

    # -- slots --
    def _ref(self, service_id: str) -> tuple[bytes, int]:
        ref = self._keys.get(service_id)
        if ref is None:
            if len(self._keys) > 1 << 20:
                self._keys.clear()
            key = _key(service_id)
            ref = self._keys[service_id] = (key, _home(key, self.mask))
        return ref

    def _used(self) -> int:
        return int(struct.unpack_from("<q", self.mm, self.head)[0])

    def _set_used(self, value: int) -> None:
        struct.pack_into("<q", self.mm, self.head, value)

    def _find(self, key: bytes, home: int) -> tuple[int, bool]:
        """(slot index, found): the key's slot, or the empty slot where it would go."""
        mm, base, slot, mask = self.mm, self.base, self.slot, self.mask
        i = home
        for _ in range(self.capacity):
            off = base + i * slot
            if mm[off] == 0:
                return i, False
            if mm[off : off + KEY_SIZE] == key:
                return i, True
            i = (i + 1) & mask
        return -1, False

    def _delete(self, i: int) -> None:
        """Backward-shift deletion: entries after ``i`` whose probe path crosses it move up."""
        mm, base, slot, mask = self.mm, self.base, self.slot, self.mask
        j = i
        while True:
            j = (j + 1) & mask
            off_j = base + j * slot
            if mm[off_j] == 0:
                break
            k = _home(mm[off_j : off_j + KEY_SIZE], mask)
            # the entry at j stays when its home k lies cyclically in (i, j]
            if (i < k <= j) if i <= j else (k > i or k <= j):
                continue
            off_i = base + i * slot
            mm[off_i : off_i + slot] = mm[off_j : off_j + slot]
            i = j
        off = base + i * slot
        mm[off : off + slot] = bytes(slot)
        self._set_used(self._used() - 1)

    # -- the hot path --
    def acquire(self, service_id: str, worker: int, limit: int, others: int = 0) -> bool | None:
        """Take a slot for ``worker`` unless ``limit`` (> 0; 0: unlimited) is reached by the host total
        plus ``others`` (the other hosts'). None: the table is full (the caller counts locally)."""
        key, home = self._ref(service_id)
        mm, lock = self.mm, self.lock
        fcntl.lockf(lock.fd, fcntl.LOCK_EX, 1, lock.index)  # `with lock`, inlined: the hot path
        try:
            i, found = self._find(key, home)
            if found:
                off = self.base + i * self.slot + KEY_SIZE
                total = _U32.unpack_from(mm, off)[0]
                if limit > 0 and total + others >= limit:
                    return False
                col = off + 4 + 4 * worker
                _U32.pack_into(mm, off, total + 1)
                _U32.pack_into(mm, col, _U32.unpack_from(mm, col)[0] + 1)
                return True
            if limit > 0 and others >= limit:
                return False
            if i < 0 or self._used() >= self.limit_used:
                if not self._full_logged:
                    self._full_logged = True
                    log.error(
                        "shared connection table full (%d services): counting per worker", self.capacity
                    )
                return None
            counts = [0] * self.workers
            counts[worker] = 1
            self.row.pack_into(mm, self.base + i * self.slot, key, 1, *counts)
            self._set_used(self._used() + 1)
            return True
        finally:
            fcntl.lockf(lock.fd, fcntl.LOCK_UN, 1, lock.index)

    def release(self, service_id: str, worker: int) -> bool:
        """Give back one of ``worker``'s slots; False when it held none (nothing changed)."""
        key, home = self._ref(service_id)
        mm, lock = self.mm, self.lock
        fcntl.lockf(lock.fd, fcntl.LOCK_EX, 1, lock.index)
        try:
            i, found = self._find(key, home)
            if not found:
                return False
            off = self.base + i * self.slot + KEY_SIZE
            col = off + 4 + 4 * worker
            mine = _U32.unpack_from(mm, col)[0]
            if mine <= 0:
                return False
            total = _U32.unpack_from(mm, off)[0] - 1
            if total <= 0:
                self._delete(i)
            else:
                _U32.pack_into(mm, off, total)
                _U32.pack_into(mm, col, mine - 1)
            return True
        finally:
            fcntl.lockf(lock.fd, fcntl.LOCK_UN, 1, lock.index)

    def total(self, service_id: str) -> int:
        key, home = self._ref(service_id)
        with self.lock:
            i, found = self._find(key, home)
            return int(self.row.unpack_from(self.mm, self.base + i * self.slot)[1]) if found else 0

    # -- whole table --
    def _entries(self) -> Iterator[tuple[int, tuple[int, ...], bytes]]:
        for i in range(self.capacity):
            off = self.base + i * self.slot
            if self.mm[off] != 0:
                key, total, *cols = self.row.unpack_from(self.mm, off)
                yield i, (total, *cols), key

    def snapshot(self) -> dict[str, int]:
        """The host's open connections per service (read without the lock: a view at most a few
        microseconds inconsistent, for the store row; one pass over the table)."""
        out: dict[str, int] = {}
        fmt = struct.Struct(f"<{KEY_SIZE}sI{self.slot - KEY_SIZE - 4}x")
        view = self.mm[self.base : self.base + self.slot * self.capacity]
        for key, total in fmt.iter_unpack(view):
            if total and key[0]:
                out[key.rstrip(b"\0").decode(errors="replace")] = total
        return out

    def drop_worker(self, worker: int) -> int:
        """A worker died: subtract its counts (its connections died with it). Returns how many."""
        dropped = 0
        with self.lock:
            i = 0
            while i < self.capacity:
                off = self.base + i * self.slot
                if self.mm[off] == 0:
                    i += 1
                    continue
                values = list(self.row.unpack_from(self.mm, off))
                mine = values[2 + worker]
                if mine <= 0:
                    i += 1
                    continue
                dropped += mine
                values[1] -= mine
                values[2 + worker] = 0
                if values[1] <= 0:
                    self._delete(i)  # an entry may have moved into i: look at it again
                else:
                    self.row.pack_into(self.mm, off, *values)
                    i += 1
        if self.stats is not None:
            self.stats.set_counts(worker, int(self.stats.get(worker)["admitted"]), 0)
        return dropped

    def check(self) -> None:
        """Invariants (tests): every entry is reachable from its home, totals are the column sums."""
        for i, (total, *cols), key in self._entries():
            assert total == sum(cols) and total > 0, (i, total, cols)
            j, found = self._find(key, _home(key, self.mask))
            assert found and j == i, (i, j)
        assert sum(1 for _ in self._entries()) == self._used()


class StripedCounts:
    """``stripes`` independent SharedCounts (each its own lock and 1/stripes of the slots); a service
    always goes to the same stripe, so a limit stays one exact check-and-increment while workers
    counting different services rarely wait for each other (one lock would bound a host's limited
    connections at a few hundred thousand per second)."""

    def __init__(
        self,
        region: SharedRegion,
        workers: int,
        capacity: int = 1 << 16,
        stats: WorkerStats | None = None,
        stripes: int = 16,
    ) -> None:
        if stripes & (stripes - 1) or capacity % stripes:
            raise ValueError("stripes must be a power of two dividing the capacity")
        self.stats, self.capacity = stats, capacity
        self.stripes = [SharedCounts(region, workers, capacity // stripes, stats) for _ in range(stripes)]
        self._mask = stripes - 1
        self._which: dict[str, SharedCounts] = {}

    def stripe(self, service_id: str) -> SharedCounts:
        table = self._which.get(service_id)
        if table is None:
            if len(self._which) > 1 << 20:
                self._which.clear()
            table = self._which[service_id] = self.stripes[zlib.adler32(service_id.encode()) & self._mask]
        return table

    def acquire(self, service_id: str, worker: int, limit: int, others: int = 0) -> bool | None:
        return self.stripe(service_id).acquire(service_id, worker, limit, others)

    def release(self, service_id: str, worker: int) -> bool:
        return self.stripe(service_id).release(service_id, worker)

    def total(self, service_id: str) -> int:
        return self.stripe(service_id).total(service_id)

    def snapshot(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for table in self.stripes:
            out.update(table.snapshot())
        return out

    def drop_worker(self, worker: int) -> int:
        return sum(table.drop_worker(worker) for table in self.stripes)

    def check(self) -> None:
        for table in self.stripes:
            table.check()
