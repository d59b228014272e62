"""A gateway host on every core: a supervisor and N forked worker processes on the same ports.

    proxyplane gateway --workers N                      (default: the CPUs this process may run on)
    python -m proxyplane.gateway.standalone --workers N ...

Each worker is a whole gateway (its own event loop, listeners, tunnel engine, store sync); every listener
sets SO_REUSEPORT, so the kernel spreads the connections of each port over the workers. What must be exact
across them lives in memory the supervisor creates before forking (``HostShared``): the open connections
per service (shared_counts.StripedCounts: the connection limits) and the sticky sessions
(shared_sticky.SharedSticky). Usage needs no sharing: each worker flushes its own rows and the store's
upsert adds them (usage_sink.py), so the per-minute sums are exact.

The supervisor forks the workers, restarts one that dies (after 0.5 s, doubling per quick death up to
30 s; a worker that ran 30 s starts the count again), subtracts a dead worker's open connections from the
shared counts, forwards SIGTERM/SIGINT to the workers and exits once they have (SIGKILL after
``grace`` seconds). It writes a status file (``status_path``, JSON: host, pid, workers with pid,
restarts, admitted and open connections) every second. Workers get SIGTERM should the supervisor die.
A worker that cannot listen (server.PortTaken: a port taken or not permitted) exits with PORT_TAKEN_EXIT
and sends its one-line message over a pipe: restarting cannot help, so the supervisor stops the other
workers, prints that line last and returns 1 (issue 22.7).
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import logging
import os
import signal
import sys
import time
import traceback
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from .limits import WorkerLimiter
from .server import PortTaken
from .shared_counts import SharedRegion, StripedCounts, WorkerStats
from .shared_sticky import SLOT, SharedSticky
from .sticky_sync import SharedRouter

log = logging.getLogger(__name__)
BACKOFF_FIRST, BACKOFF_MAX, STEADY = 0.5, 30.0, 30.0
_SIGNALS = {signal.SIGCHLD, signal.SIGTERM, signal.SIGINT}
PORT_TAKEN_EXIT = 75  # a worker's exit status when its port is taken or not permitted (never restarted)


def json_logs() -> bool:
    """PROXYPLANE_LOG_FORMAT=json (the variable observability/settings.py reads; the gateway imports only
    core and storage): the supervisor's and the workers' lines are JSON log events then."""
    return os.environ.get("PROXYPLANE_LOG_FORMAT", "").strip().lower() == "json"


def say(line: str, stream: TextIO | None = None, level: int = logging.INFO) -> None:
    """One line for the operator: a log event (one JSON object, through the handler logs.from_env
    installed) when the logs are JSON, else the plain line on ``stream`` (stdout), as always."""
    if json_logs():
        log.log(level, line.strip())
    else:
        print(line, file=stream or sys.stdout, flush=True)


def default_workers() -> int:
    """The number of CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


class HostShared:
    """The memory the workers of one host share (create before forking)."""

    def __init__(
        self, workers: int, host_id: str | None = None, services: int = 1 << 16, sessions: int = 1 << 17
    ) -> None:
        self.workers = workers
        self.host_id = host_id or "host-" + uuid.uuid4().hex[:12]
        slot = (48 + 4 + 4 * workers + 7) & ~7
        size = 64 * workers + 16 + slot * services + SLOT * sessions + 4096
        self.region = SharedRegion(size)
        self.stats = WorkerStats(self.region, workers)
        stripes = 16 if services >= 1024 else 1
        self.counts = StripedCounts(self.region, workers, services, self.stats, stripes)
        self.sticky = SharedSticky(self.region, sessions)

    def limiter(self, worker: int) -> WorkerLimiter:
        return WorkerLimiter(self.counts, worker, self.host_id)

    def router(self) -> SharedRouter:
        return SharedRouter(shared=self.sticky)


@dataclass
class _Worker:
    index: int
    pid: int = 0
    started: float = 0.0
    restarts: int = 0
    quick_deaths: int = 0
    restart_at: float | None = None
    exits: list[int] = field(default_factory=list)
    message_fd: int = -1  # read end of the pipe the worker writes a PortTaken line to


def _die_with_parent() -> None:
    with contextlib.suppress(Exception):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


class Supervisor:
    def __init__(
        self,
        shared: HostShared,
        run_worker: Callable[[int], None],
        *,
        status_path: Path | None = None,
        grace: float = 15.0,
        name: str = "gateway",
    ) -> None:
        self.shared, self.run_worker = shared, run_worker
        self.status_path, self.grace, self.name = status_path, grace, name
        self.workers = [_Worker(i) for i in range(shared.workers)]
        self.fatal: str | None = None  # a worker's PortTaken line: stop instead of restarting

    def _say(self, message: str, level: int = logging.INFO) -> None:
        say(f"{self.name} supervisor pid {os.getpid()}: {message}", sys.stderr, level)

    def _spawn(self, w: _Worker, old_mask: set[int | signal.Signals]) -> None:
        read_fd, write_fd = os.pipe()
        pid = os.fork()
        if pid == 0:  # the worker
            code = 0
            try:
                os.close(read_fd)
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)
                _die_with_parent()
                self.run_worker(w.index)
            except PortTaken as exc:
                with contextlib.suppress(OSError):
                    os.write(write_fd, str(exc.code).encode()[:4000])
                code = PORT_TAKEN_EXIT
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 1
            except BaseException:
                if json_logs():
                    log.exception("%s worker %d failed", self.name, w.index)
                else:
                    traceback.print_exc()
                code = 1
            finally:
                with contextlib.suppress(Exception):
                    sys.stdout.flush()
                    sys.stderr.flush()
                os._exit(code)
        os.close(write_fd)
        w.pid, w.started, w.restart_at, w.message_fd = pid, time.time(), None, read_fd
        self.shared.stats.set_started(w.index, pid, w.started, w.restarts)
        self._say(f"worker {w.index}/{len(self.workers)} pid {pid} started")

    def _reap(self, stopping: bool) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            w = next((w for w in self.workers if w.pid == pid), None)
            if w is None:
                continue
            code = os.waitstatus_to_exitcode(status)
            w.exits.append(code)
            w.pid = 0
            message = self._message(w)
            dropped = self.shared.counts.drop_worker(w.index)
            if code == PORT_TAKEN_EXIT and message and self.fatal is None:
                self.fatal = message
            if stopping or self.fatal is not None:
                continue
            lived = time.time() - w.started
            w.quick_deaths = 0 if lived >= STEADY else w.quick_deaths + 1
            delay = min(BACKOFF_MAX, BACKOFF_FIRST * 2 ** max(0, w.quick_deaths - 1))
            w.restart_at = time.monotonic() + delay
            self._say(
                f"worker {w.index} pid {pid} exited ({code}) after {lived:.1f} s, "
                f"{dropped} open connection(s) released; restart in {delay:.1f} s",
                logging.WARNING,
            )

    @staticmethod
    def _message(w: _Worker) -> str:
        """What the dead worker wrote to its pipe (its writer is gone, so this reads to the end)."""
        if w.message_fd < 0:
            return ""
        chunks: list[bytes] = []
        with contextlib.suppress(OSError):
            while chunk := os.read(w.message_fd, 4096):
                chunks.append(chunk)
        os.close(w.message_fd)
        w.message_fd = -1
        return b"".join(chunks).decode(errors="replace").strip()

    def status(self) -> dict[str, object]:
        return {
            "host": self.shared.host_id,
            "supervisor_pid": os.getpid(),
            "workers": len(self.workers),
            "processes": [{**self.shared.stats.get(w.index), "pid": w.pid} for w in self.workers],
        }

    def _write_status(self) -> None:
        if self.status_path is None:
            return
        tmp = self.status_path.with_suffix(".tmp")
        with contextlib.suppress(OSError):
            tmp.write_text(json.dumps(self.status()))
            os.replace(tmp, self.status_path)

    def run(self) -> int:
        """Run until SIGTERM/SIGINT; 0 once every worker has exited (1 when one could not listen)."""
        signal.signal(signal.SIGCHLD, lambda *_: None)  # a handler, so SIGCHLD is never discarded
        old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)
        try:
            self._say(f"host {self.shared.host_id}, {len(self.workers)} worker(s)")
            for w in self.workers:
                self._spawn(w, old_mask)
            while True:
                self._write_status()
                now = time.monotonic()
                due = [w.restart_at for w in self.workers if w.restart_at is not None]
                timeout = max(0.0, min([1.0, *(d - now for d in due)]))
                info = signal.sigtimedwait(_SIGNALS, timeout) if timeout > 0 else None
                if info is not None and info.si_signo in (signal.SIGTERM, signal.SIGINT):
                    self._say(f"signal {signal.Signals(info.si_signo).name}: stopping the workers")
                    break
                self._reap(False)
                if self.fatal is not None:
                    self._say("a worker cannot listen: stopping the workers")
                    break
                now = time.monotonic()
                for w in self.workers:
                    if w.restart_at is not None and w.restart_at <= now:
                        w.restarts += 1
                        self._spawn(w, old_mask)
            return self._stop()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)

    def _stop(self) -> int:
        for w in self.workers:
            if w.pid:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(w.pid, signal.SIGTERM)
        deadline = time.monotonic() + self.grace
        while any(w.pid for w in self.workers):
            self._reap(True)
            left = deadline - time.monotonic()
            if not any(w.pid for w in self.workers):
                break
            if left <= 0:
                for w in self.workers:
                    if w.pid:
                        self._say(f"worker {w.index} pid {w.pid} did not stop: SIGKILL", logging.WARNING)
                        with contextlib.suppress(ProcessLookupError):
                            os.kill(w.pid, signal.SIGKILL)
                deadline = time.monotonic() + 5.0
                continue
            signal.sigtimedwait({signal.SIGCHLD}, min(left, 0.5))
        self._write_status()
        failed = [w.index for w in self.workers if w.exits and w.exits[-1] not in (0, -signal.SIGTERM)]
        self._say("stopped" + (f" (workers {failed} exited with errors)" if failed else ""))
        if self.fatal is not None:
            say(self.fatal, sys.stderr, logging.ERROR)
            return 1
        return 0
