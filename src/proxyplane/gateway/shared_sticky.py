"""Sticky sessions shared by the worker processes of one gateway host.

A session id must leave from the same exit IP whichever worker gets the connection. Every sticky choice
of a worker goes through this table under its lock (routing.Router._sticky via sticky_sync.SharedRouter):
a live session found here is used as it is; otherwise the worker picks the exit IP and writes it here
before it answers, so two workers that see a new sid at the same instant still agree (the second finds
the first's entry). The store sync (sticky_sync.StickySync) stays as between nodes: each worker writes
the sessions it created and applies the API's rotations/ends/purges and other nodes' sessions, writing
those into this table as well.

Open addressing (linear probing) keyed by a 16-byte digest of (service id, sid); an entry holds the exit
IP (text) and the session's start and expiry. Expired entries are reused by inserts along their probe
path and removed by ``sweep`` (backward shift, a chunk per lock hold). When the table is 7/8 full of live
sessions, ``put`` returns False and the worker keeps the session to itself (the store converges it).
"""

from __future__ import annotations

import hashlib
import logging
import struct

from .shared_counts import SharedRegion

log = logging.getLogger(__name__)

_ROW = struct.Struct("<16sddB45s")  # key, started, expires, ip length, ip
SLOT = (_ROW.size + 7) & ~7


def sticky_key(service_id: str, sid: str) -> bytes:
    digest = bytearray(hashlib.blake2b(f"{service_id}\0{sid}".encode(), digest_size=16).digest())
    digest[0] |= 1  # never all zero: a zero first byte marks an empty slot
    return bytes(digest)


class SharedSticky:
    def __init__(self, region: SharedRegion, capacity: int = 1 << 17) -> None:
        if capacity & (capacity - 1):
            raise ValueError("capacity must be a power of two")
        self.mm, self.capacity, self.mask = region.mm, capacity, capacity - 1
        self.lock = region.new_lock()
        self.head = region.take(8)
        self.base = region.take(SLOT * capacity)
        self.limit_used = capacity - capacity // 8
        self._full_logged = False
        self._sweep_at = 0

    def _home(self, key: bytes) -> int:
        return int.from_bytes(key[8:], "little") & self.mask

    def _used(self) -> int:
        return int(struct.unpack_from("<q", self.mm, self.head)[0])

    def _set_used(self, value: int) -> None:
        struct.pack_into("<q", self.mm, self.head, value)

    def _find(self, key: bytes, now: float) -> tuple[int, int]:
        """(slot of the key or -1, first reusable slot on its path (expired or empty) or -1)."""
        mm, base, mask = self.mm, self.base, self.mask
        i = self._home(key)
        free = -1
        for _ in range(self.capacity):
            off = base + i * SLOT
            if mm[off] == 0:
                return -1, i if free < 0 else free
            if mm[off : off + 16] == key:
                return i, free
            if free < 0 and struct.unpack_from("<d", mm, off + 24)[0] <= now:
                free = i
            i = (i + 1) & mask
        return -1, free

    # -- under the lock (``with table.lock:``) --
    def get(self, key: bytes, now: float) -> tuple[str, float, float] | None:
        """The live session (exit IP, started, expires) of ``key``; None when absent or expired."""
        i, _ = self._find(key, now)
        if i < 0:
            return None
        _, started, expires, n, ip = _ROW.unpack_from(self.mm, self.base + i * SLOT)
        if expires <= now:
            return None
        return ip[:n].decode(), started, expires

    def put(self, key: bytes, exit_ip: str, started: float, expires: float, now: float) -> bool:
        i, free = self._find(key, now)
        raw = exit_ip.encode()
        if i < 0:
            if free < 0 or (self.mm[self.base + free * SLOT] == 0 and self._used() >= self.limit_used):
                if not self._full_logged:
                    self._full_logged = True
                    log.error("shared sticky table full (%d sessions): sessions stay per worker",
                              self.capacity)
                return False
            if self.mm[self.base + free * SLOT] == 0:
                self._set_used(self._used() + 1)
            i = free
        _ROW.pack_into(self.mm, self.base + i * SLOT, key, started, expires, len(raw), raw)
        return True

    def delete(self, key: bytes) -> bool:
        i, _ = self._find(key, float("-inf"))
        if i < 0:
            return False
        self._remove(i)
        return True

    def _remove(self, i: int) -> None:
        mm, base, mask = self.mm, self.base, self.mask
        j = i
        while True:
            j = (j + 1) & mask
            off_j = base + j * SLOT
            if mm[off_j] == 0:
                break
            k = self._home(mm[off_j : off_j + 16])
            if (i < k <= j) if i <= j else (k > i or k <= j):
                continue
            mm[base + i * SLOT : base + (i + 1) * SLOT] = mm[off_j : off_j + SLOT]
            i = j
        mm[base + i * SLOT : base + (i + 1) * SLOT] = bytes(SLOT)
        self._set_used(self._used() - 1)

    # -- housekeeping (takes the lock itself) --
    def sweep(self, now: float, chunk: int = 4096) -> int:
        """Remove expired entries, ``chunk`` slots per lock hold; the number removed."""
        removed = 0
        start = 0
        while start < self.capacity:
            with self.lock:
                i = start
                end = min(start + chunk, self.capacity)
                while i < end:
                    off = self.base + i * SLOT
                    if self.mm[off] != 0 and struct.unpack_from("<d", self.mm, off + 24)[0] <= now:
                        self._remove(i)  # a later entry may have moved into i: look again
                        removed += 1
                    else:
                        i += 1
            start = end
        return removed

    def live(self, now: float) -> int:
        """Live sessions (a full pass; status and tests)."""
        n = 0
        for i in range(self.capacity):
            off = self.base + i * SLOT
            if self.mm[off] != 0 and struct.unpack_from("<d", self.mm, off + 24)[0] > now:
                n += 1
        return n
