"""The gateway's usage spool (issue 35): metered usage is on local disk before it is anywhere else.

The meter hands its rows to the spool every harvest (``Meter.run``'s interval: 1 s), which writes them as
one batch file (``<ns>-<uuid>.usage``: written, fsync'd, renamed, directory fsync'd: a file is whole or
absent). A writer task sends the spooled files to the store every flush interval
(``usage_sink.write_batches``: each file's id is claimed in ``usage_batches`` in the transaction that adds
its rows, so a batch is applied exactly once however often it is sent) and deletes a file once applied.

So: the store down -> files pile up (bounded by ``max_bytes``; past it the meter keeps the rows in memory
and says so in the log) and are replayed in order when it returns; SIGTERM during an outage leaves them
for the next start (worker k's directory is ``w<k>``; worker 0 also replays the directories of workers that
no longer run); SIGKILL loses at most the rows counted since the last harvest (one harvest interval).

The meter marks rows "flushed" (what the sub-user and quota limits subtract, since the store's totals
include them) only when their batch is in the store: ``on_applied`` for the files this process wrote.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path

from .metering import UsageRow

log = logging.getLogger(__name__)

SUFFIX = ".usage"
GROUP = 64  # files per store transaction when replaying a backlog
ORPHAN_AGE = 60.0  # seconds: another worker directory's file this old is replayed by worker 0

Writer = Callable[[list[tuple[str, list[UsageRow]]]], Awaitable[set[str]]]


class SpoolFull(Exception):
    """The spool reached its bound: the meter keeps the rows in memory (Meter.flush restores them)."""


def encode(rows: list[UsageRow]) -> bytes:
    return json.dumps(
        [
            [
                r.service_id,
                int(r.minute.timestamp()),
                r.host,
                r.requests,
                r.connections,
                r.bytes_up,
                r.bytes_down,
                r.errors,
                [[ip, cat, n] for (ip, cat), n in r.exit_errors.items()],
            ]
            for r in rows
        ],
        separators=(",", ":"),
    ).encode()


def decode(data: bytes) -> list[UsageRow]:
    rows = []
    for sid, minute, host, req, conns, up, down, errors, exits in json.loads(data):
        row = UsageRow(sid, datetime.fromtimestamp(minute, UTC), host, req, conns, up, down, dict(errors))
        row.exit_errors = {(ip, cat): n for ip, cat, n in exits}
        rows.append(row)
    return rows


def _write_file(directory: Path, name: str, data: bytes) -> None:
    tmp = directory / (name + ".tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.rename(tmp, directory / name)
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class UsageSpool:
    """A callable usage sink (the meter's) backed by a directory, and the task that empties it."""

    defers_flush_marks = True  # Meter.flush: rows count as flushed when on_applied says so

    def __init__(
        self,
        root: Path,
        worker: int,
        write: Writer,
        *,
        max_bytes: int,
        on_applied: Callable[[list[UsageRow]], None] | None = None,
    ) -> None:
        self.root, self.worker = root, worker
        self.directory = root / f"w{worker}"
        self.directory.mkdir(parents=True, exist_ok=True)
        for stale in self.directory.glob("*.tmp"):  # a write cut short by a crash: never renamed
            stale.unlink(missing_ok=True)
        self.write, self.max_bytes, self.on_applied = write, max_bytes, on_applied
        self._own: set[str] = set()  # files this process wrote (its meter counted their rows)
        self._sizes: dict[Path, int] = {p: p.stat().st_size for p in self._files()}
        self.store_error: str | None = None  # the last write's failure; None once a write succeeds
        self.failed_since: float | None = None
        self.applied_batches = 0
        self._drain_lock = asyncio.Lock()

    def _files(self) -> list[Path]:
        dirs = [self.directory]
        if self.worker == 0:  # workers that no longer run: their files, once old enough
            dirs += [d for d in self.root.iterdir() if d.is_dir() and d != self.directory]
        cutoff = time.time() - ORPHAN_AGE
        files = []
        for d in dirs:
            for p in d.glob("*" + SUFFIX):
                if d == self.directory or _mtime(p) < cutoff:
                    files.append(p)
        return sorted(files, key=lambda p: p.name)

    @property
    def bytes(self) -> int:
        return sum(self._sizes.values())

    @property
    def files(self) -> int:
        return len(self._sizes)

    async def __call__(self, rows: list[UsageRow]) -> None:
        """The meter's sink: the rows as one fsync'd batch file."""
        if self.bytes >= self.max_bytes:
            raise SpoolFull(f"usage spool full ({self.bytes} bytes in {self.directory})")
        data = encode(rows)
        name = f"{time.time_ns():020d}-{uuid.uuid4()}{SUFFIX}"
        await asyncio.to_thread(_write_file, self.directory, name, data)
        self._own.add(name)
        self._sizes[self.directory / name] = len(data)

    async def drain(self) -> int:
        """Send every spooled file to the store, oldest first, GROUP per transaction; delete those
        applied. Returns the batches sent; raises (keeping the rest) when the store fails."""
        async with self._drain_lock:
            sent = 0
            files = self._files()
            for i in range(0, len(files), GROUP):
                group = []
                for path in files[i : i + GROUP]:
                    try:
                        group.append((path, decode(path.read_bytes())))
                    except FileNotFoundError:  # replayed and deleted by another worker meanwhile
                        self._sizes.pop(path, None)
                    except ValueError:  # cannot happen for a renamed file; kept aside, never lost
                        log.error("usage spool file %s unreadable; moved aside", path)
                        path.rename(path.with_suffix(".bad"))
                        self._sizes.pop(path, None)
                if not group:
                    continue
                try:
                    await self.write([(_batch_id(p), rows) for p, rows in group])
                except Exception as exc:
                    if self.store_error is None:
                        log.warning("usage to the store failed (%s); spooling in %s", exc, self.directory)
                        self.failed_since = time.time()
                    self.store_error = f"{type(exc).__name__}: {exc}"[:200]
                    raise
                for path, rows in group:
                    path.unlink(missing_ok=True)
                    self._sizes.pop(path, None)
                    if path.name in self._own:
                        self._own.discard(path.name)
                        if self.on_applied is not None:
                            self.on_applied(rows)
                sent += len(group)
            if self.store_error is not None:
                log.warning("usage store writes resumed; spool replayed")
            self.store_error, self.failed_since = None, None
            self.applied_batches += sent
            return sent

    async def run(self, interval: float) -> None:
        """Empty the spool every ``interval`` seconds until cancelled."""
        while True:
            await asyncio.sleep(interval)
            with contextlib.suppress(Exception):  # logged once per outage in drain()
                await self.drain()

    async def close(self, timeout: float) -> None:
        """The last try at shutdown, bounded: whatever the store does not take stays for the next start."""
        try:
            await asyncio.wait_for(self.drain(), timeout)
        except Exception:
            log.warning(
                "usage left in the spool for the next start: %d file(s), %d bytes", self.files, self.bytes
            )


def _batch_id(path: Path) -> str:
    return path.name.removesuffix(SUFFIX).split("-", 1)[1]


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except FileNotFoundError:
        return time.time()
