"""Start the documented multi-host layout on loopback (docs/deploy.md), check readiness and metrics, stop it.

    .venv/bin/python scripts/layout_check.py postgresql://postgres@127.0.0.1:55432/pp_layout

One PostgreSQL (given; its schema is migrated, nothing is dropped), 2 API processes (`proxyplane serve` with
the embedded gateway, worker and renewals off, metrics on a port of their own), 2 gateway nodes
(`proxyplane gateway --workers 1`, each its own ports and metrics port) and 1 webhook worker. Checks: every
/readyz answers 200, every /metrics has its series, an API request shows in that process's metrics, a
rotating-gateway connection without credentials is refused and counted; then SIGTERM to all, each exits
cleanly (0, or the re-raised SIGTERM uvicorn ends with after its graceful shutdown).
Exit 0 when all holds, 1 otherwise (with the log of the process at fault). Loopback only."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

PY = sys.executable


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def get(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=3) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()
    except OSError:
        return 0, ""


class Layout:
    def __init__(self, url: str, home: Path) -> None:
        self.url, self.home = url, home
        self.procs: dict[str, tuple[subprocess.Popen[bytes], Path]] = {}
        self.base = {
            **os.environ,
            "PROXYPLANE_DATABASE_URL": url,
            "PROXYPLANE_SECRET_KEY": "layout-check-secret-key-layout-check-secret-key",
            "PROXYPLANE_LOG_FORMAT": "json",
            "PROXYPLANE_GATEWAY_IN_SERVE": "false",
            "PROXYPLANE_WORKER_IN_SERVE": "false",
            "PROXYPLANE_RENEWALS_IN_SERVE": "false",
            "PROXYPLANE_GATEWAY_STATIC_HTTP_PORT": "-1",
            "PROXYPLANE_GATEWAY_STATIC_HTTPS_PORT": "-1",
            "PROXYPLANE_GATEWAY_STATIC_SOCKS_PORT": "-1",
            "PROXYPLANE_GATEWAY_HTTPS_PORT": "-1",
            "PROXYPLANE_GATEWAY_DRAIN_SECONDS": "5",
        }

    def start(self, name: str, args: list[str], env: dict[str, str]) -> None:
        log = self.home / f"{name}.log"
        home = self.home / name
        home.mkdir(parents=True, exist_ok=True)
        proc = subprocess.Popen(
            [PY, "-c", "from proxyplane.cli import main; main()", *args],
            env={**self.base, "PROXYPLANE_HOME": str(home), **env},
            stdout=log.open("wb"),
            stderr=subprocess.STDOUT,
        )
        self.procs[name] = (proc, log)

    def fail(self, name: str, why: str) -> None:
        print(f"FAIL {name}: {why}")
        if name in self.procs:
            print(self.procs[name][1].read_text()[-3000:])
        raise SystemExit(1)

    def wait_ready(self, name: str, port: int, within: float = 60.0) -> None:
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            proc = self.procs[name][0]
            if proc.poll() is not None:
                self.fail(name, f"exited with {proc.returncode} before ready")
            if get(port, "/readyz")[0] == 200:
                print(f"ok   {name} ready (:{port}/readyz)")
                return
            time.sleep(0.3)
        self.fail(name, f"not ready within {within:.0f} s")

    def stop(self) -> bool:
        ok = True
        for proc, _ in self.procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for name, (proc, _) in self.procs.items():
            try:
                code = proc.wait(40)
            except subprocess.TimeoutExpired:
                proc.kill()
                code = proc.wait()
            if code not in (0, -signal.SIGTERM):  # uvicorn re-raises SIGTERM after a clean shutdown
                print(f"FAIL {name} exited {code} after SIGTERM")
                ok = False
            else:
                print(f"ok   {name} stopped ({'exit 0' if code == 0 else 'SIGTERM after a clean shutdown'})")
        return ok


def main(url: str) -> int:
    subprocess.run(
        [PY, "-c", "from proxyplane.cli import main; main()", "migrate"],
        check=True,
        env={**os.environ, "PROXYPLANE_DATABASE_URL": url},
    )
    home = Path(tempfile.mkdtemp(prefix="proxyplane-layout-"))
    layout = Layout(url, home)
    apis = {f"api{i}": (free_port(), free_port()) for i in (1, 2)}
    gateways = {f"gateway{i}": (free_port(), free_port()) for i in (1, 2)}
    try:
        for name, (port, metrics) in apis.items():  # one after the other: the first seeds the demo stock
            layout.start(
                name,
                ["serve", "--port", str(port)],
                {"PROXYPLANE_METRICS_PORT": str(metrics), "PROXYPLANE_METRICS_ON_API": "false"},
            )
            layout.wait_ready(name, metrics)
        for name, (port, metrics) in gateways.items():
            layout.start(
                name,
                ["gateway", "--workers", "1"],
                {
                    "PROXYPLANE_GATEWAY_HTTP_PORT": str(port),
                    "PROXYPLANE_GATEWAY_SOCKS_PORT": str(free_port()),
                    "PROXYPLANE_GATEWAY_METRICS_PORT": str(metrics),
                },
            )
        layout.start("worker", ["worker"], {})
        for name, (_, metrics) in gateways.items():
            layout.wait_ready(name, metrics)
        for name, (port, metrics) in apis.items():
            if get(port, "/metrics")[0] != 404:
                layout.fail(name, "/metrics served on the API port although PROXYPLANE_METRICS_ON_API=false")
            if get(port, "/api/v1/openapi.json")[0] != 200:
                layout.fail(name, "the API does not answer")
            text = get(metrics, "/metrics")[1]
            if (
                'proxyplane_http_requests_total{method="GET",route="/api/v1/openapi.json",status="200"}'
                not in text
            ):
                layout.fail(name, "the API request is not in its metrics")
            print(f"ok   {name} metrics count its requests")
        for name, (port, metrics) in gateways.items():
            with socket.create_connection(("127.0.0.1", port), timeout=3) as s:
                s.sendall(b"GET http://127.0.0.1:9/ HTTP/1.1\r\nHost: x\r\n\r\n")
                reply = s.recv(100)
            if b" 407 " not in reply:
                layout.fail(name, f"a request without credentials got {reply[:40]!r}, not 407")
            text = get(metrics, "/metrics")[1]
            if "proxyplane_gateway_access_table_services" not in text or (
                'proxyplane_gateway_connections_refused_total{reason="auth_not_whitelisted"}' not in text
            ):
                layout.fail(name, "gateway metrics missing the access table or the refusal")
            print(f"ok   {name} refuses without credentials and counts it")
    finally:
        stopped = layout.stop()
    return 0 if stopped else 1


if __name__ == "__main__":
    if len(sys.argv) != 2 or not sys.argv[1].startswith("postgresql"):
        raise SystemExit(__doc__)
    raise SystemExit(main(sys.argv[1]))
