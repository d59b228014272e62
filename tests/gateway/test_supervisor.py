"""The workers' supervisor (gateway/workers.py) on its own, with trivial real worker processes: a worker
that dies is restarted after its backoff, SIGINT stops the host, a worker that ignores SIGTERM is killed
after the grace period, and the supervisor exits 0 with no worker left."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

from proxyplane.gateway.workers import HostShared, Supervisor


def wait_for(check, within: float) -> None:
    deadline = time.monotonic() + within
    while not check():
        assert time.monotonic() < deadline, "not true in time"
        time.sleep(0.05)


def read(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def test_restart_after_a_crash_then_a_clean_stop(tmp_path: Path) -> None:
    status, crashed = tmp_path / "status.json", tmp_path / "crashed"

    def worker(index: int) -> None:
        if index == 1 and not crashed.exists():
            crashed.touch()
            raise SystemExit(3)  # dies at once, the first time
        if index == 0:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)  # will not stop: SIGKILL after the grace period
        while True:
            time.sleep(0.05)

    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            code = Supervisor(
                HostShared(2, services=64, sessions=64), worker, status_path=status, grace=1.0, name="test"
            ).run()
        finally:
            os._exit(code)
    try:

        def restarted() -> bool:
            procs = read(status).get("processes", [])
            return len(procs) == 2 and procs[1]["restarts"] == 1 and all(p["pid"] for p in procs)

        wait_for(restarted, 10.0)
        pids = [p["pid"] for p in read(status)["processes"]]
        os.kill(pid, signal.SIGINT)
        _, code = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(code) == 0
        for worker_pid in pids:  # reaped by the supervisor: gone
            try:
                os.kill(worker_pid, 0)
                raise AssertionError(f"worker {worker_pid} still there")
            except ProcessLookupError:
                pass
        assert all(p["pid"] == 0 for p in read(status)["processes"])
    finally:
        try:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
