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

Reads of a live session (the common case: a sid's second and later requests) take no lock: each slot
carries a sequence number that a writer makes odd before it changes the slot and even after (a seqlock);
``peek`` retries nothing, it answers only from a slot read twice with the same even number and leaves
every other case (a slot being written, an absent or expired key) to the locked path. This relies on
x86-64's store and load ordering (Python's mmap reads and writes are plain copies, no barriers), so
elsewhere ``peek`` is off and every read takes the lock.
"""

from __future__ import annotations

import hashlib
import logging
import platform
import struct

from .shared_counts import SharedRegion

log = logging.getLogger(__name__)

_SEQ = struct.Struct("<Q")  # the slot's sequence number (odd while it is being written)
_ROW = struct.Struct("<16sddB45s")  # then: key, started, expires, ip length, ip
SLOT = (8 + _ROW.size + 7) & ~7
_KEY, _EXPIRES = 8, 8 + 16 + 8  # offsets in a slot
LOCK_FREE_READS = platform.machine() in ("x86_64", "AMD64")


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
            off = base + i * SLOT + _KEY
            if mm[off] == 0:
                return -1, i if free < 0 else free
            if mm[off : off + 16] == key:
                return i, free
            if free < 0 and struct.unpack_from("<d", mm, off + 16 + 8)[0] <= now:
                free = i
            i = (i + 1) & mask
        return -1, free

    def _write(self, i: int, data: bytes) -> None:
        """Replace slot ``i``'s contents (after its sequence number), bracketed by the seqlock."""
        off = self.base + i * SLOT
        seq = _SEQ.unpack_from(self.mm, off)[0]
        _SEQ.pack_into(self.mm, off, seq + 1)
        self.mm[off + 8 : off + SLOT] = data
        _SEQ.pack_into(self.mm, off, seq + 2)

    def peek(self, key: bytes, now: float) -> tuple[str, float, float] | None:
        """The live session of ``key`` read without the lock, or None: not found, or found nothing
        certain (the caller then takes the lock and uses ``get``)."""
        if not LOCK_FREE_READS:
            return None
        mm, base, mask = self.mm, self.base, self.mask
        i = self._home(key)
        for _ in range(64):
            off = base + i * SLOT
            seq = _SEQ.unpack_from(mm, off)[0]
            if seq & 1:
                return None
            k, started, expires, n, ip = _ROW.unpack_from(mm, off + 8)
            if _SEQ.unpack_from(mm, off)[0] != seq or k[0] == 0:
                return None
            if k == key:
                return (ip[:n].decode(), started, expires) if expires > now else None
            i = (i + 1) & mask
        return None

    # -- under the lock (``with table.lock:``) --
    def get(self, key: bytes, now: float) -> tuple[str, float, float] | None:
        """The live session (exit IP, started, expires) of ``key``; None when absent or expired."""
        i, _ = self._find(key, now)
        if i < 0:
            return None
        _, started, expires, n, ip = _ROW.unpack_from(self.mm, self.base + i * SLOT + 8)
        if expires <= now:
            return None
        return ip[:n].decode(), started, expires

    def put(self, key: bytes, exit_ip: str, started: float, expires: float, now: float) -> bool:
        i, free = self._find(key, now)
        raw = exit_ip.encode()
        if i < 0:
            empty = self.mm[self.base + free * SLOT + _KEY] == 0 if free >= 0 else False
            if free < 0 or (empty and self._used() >= self.limit_used):
                if not self._full_logged:
                    self._full_logged = True
                    log.error(
                        "shared sticky table full (%d sessions): sessions stay per worker", self.capacity
                    )
                return False
            if empty:
                self._set_used(self._used() + 1)
            i = free
        self._write(i, _ROW.pack(key, started, expires, len(raw), raw).ljust(SLOT - 8, b"\0"))
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
            off_j = base + j * SLOT + _KEY
            if mm[off_j] == 0:
                break
            k = self._home(mm[off_j : off_j + 16])
            if (i < k <= j) if i <= j else (k > i or k <= j):
                continue
            self._write(i, mm[off_j : off_j - _KEY + SLOT])
            i = j
        self._write(i, bytes(SLOT - 8))
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
                    expires = struct.unpack_from("<d", self.mm, off + _EXPIRES)[0]
                    if self.mm[off + _KEY] != 0 and expires <= now:
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
            if self.mm[off + _KEY] != 0 and struct.unpack_from("<d", self.mm, off + _EXPIRES)[0] > now:
                n += 1
        return n
