"""`proxyplane gateway --workers N` with PROXYPLANE_LOG_FORMAT=json (issue 30.8): every line the supervisor
and its workers write is one JSON object (started, serving, listeners, stopped; and the one-line refusal of
a taken port, as an error event last); in text mode the lines stay as they were. The real command in a
subprocess, on a SQLite store under a temporary home."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from .conftest import free_port

CLI = [sys.executable, "-c", "from proxyplane.cli import main; main()", "gateway"]


def _env(home: Path, http_port: int, log_format: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROXYPLANE_")}
    env |= {
        "PROXYPLANE_HOME": str(home),
        "PROXYPLANE_LOG_FORMAT": log_format,
        "PROXYPLANE_GATEWAY_HOST": "127.0.0.1",
        "PROXYPLANE_GATEWAY_HTTP_PORT": str(http_port),
        "PROXYPLANE_GATEWAY_DRAIN_SECONDS": "0",
    }
    for name in ("HTTPS_PORT", "SOCKS_PORT", "STATIC_HTTP_PORT", "STATIC_HTTPS_PORT", "STATIC_SOCKS_PORT"):
        env[f"PROXYPLANE_GATEWAY_{name}"] = "-1"
    return env


def _events(text: str) -> list[dict]:
    lines = [line for line in text.splitlines() if line.strip()]
    events = [json.loads(line) for line in lines]  # raises on any plain-text line
    assert all(isinstance(e, dict) and {"ts", "level", "logger", "msg"} <= e.keys() for e in events), lines
    return events


def test_supervisor_and_workers_write_json_lines(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [*CLI, "--workers", "2"],
        env=_env(tmp_path, free_port([]), "json"),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 60
        status = tmp_path / "gateway-workers.json"
        while time.monotonic() < deadline:  # both workers serving (the supervisor's status file)
            if status.exists():
                try:
                    procs = json.loads(status.read_text())["processes"]
                except (ValueError, KeyError):
                    procs = []
                if len(procs) == 2 and all(p.get("serving") for p in procs):
                    break
            time.sleep(0.2)
        else:
            raise AssertionError("the workers did not start")
        proc.send_signal(signal.SIGTERM)
        out = proc.communicate(timeout=60)[0].decode()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, out
    messages = [e["msg"] for e in _events(out)]
    assert any("supervisor pid" in m and "worker 0/2 pid" in m and m.endswith("started") for m in messages)
    assert any(m.startswith("gateway worker 1/2 pid") for m in messages)
    assert any(m.startswith("rotating http  127.0.0.1:") for m in messages)  # the listeners, stripped
    assert any("supervisor pid" in m and m.endswith("stopped") for m in messages)


def test_a_taken_port_is_one_json_error_event_last(tmp_path: Path) -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen(1)
        port = held.getsockname()[1]
        line = (
            f"error: 127.0.0.1:{port} is already in use (PROXYPLANE_GATEWAY_HTTP_PORT): stop the program "
            "holding it or set PROXYPLANE_GATEWAY_HTTP_PORT to a free port"
        )
        for workers in ("2", "0"):
            r = subprocess.run(
                [*CLI, "--workers", workers],
                env=_env(tmp_path, port, "json"),
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert r.returncode == 1, r.stderr
            events = _events(r.stdout) + _events(r.stderr)
            last = _events(r.stderr)[-1]
            assert last["msg"] == line and last["level"] == "error", r.stderr
            assert sum(e["msg"] == line for e in events) == 1
        text = subprocess.run(
            [*CLI, "--workers", "2"],
            env=_env(tmp_path, port, "text"),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert text.stderr.splitlines()[-1] == line  # text mode: the plain line, as before
        assert " supervisor pid " in text.stderr
