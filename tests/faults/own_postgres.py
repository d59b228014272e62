"""A PostgreSQL server of the test's own (scripts/postgres.sh on its own port and directory), so a fault
test can restart the real server (the suite's server is shared: it cannot be stopped under others).
`PROXYPLANE_FAULT_PG_PORT` / `PROXYPLANE_FAULT_PG_DIR` choose where (defaults: a free port, a fresh
directory under /tmp that the postgres user can enter)."""

from __future__ import annotations

import os
import subprocess
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "postgres.sh"


def pg_bin() -> Path | None:
    found = sorted(
        Path("/usr/lib/postgresql").glob("*/bin"),
        key=lambda p: [int(x) for x in p.parent.name.split(".") if x.isdigit()],
    )
    return found[-1] if found else None


class OwnPostgres:
    def __init__(self, port: int) -> None:
        self.port = port
        self.data = Path(
            os.environ.get("PROXYPLANE_FAULT_PG_DIR") or f"/tmp/proxyplane-fault-pg-{uuid.uuid4().hex[:8]}"
        )
        self.url = ""

    def _env(self) -> dict[str, str]:
        return {**os.environ, "PROXYPLANE_PG_PORT": str(self.port), "PROXYPLANE_PG_DIR": str(self.data)}

    def start(self) -> str:
        """Create and start the server; its URL (postgresql://...:port/proxyplane_test)."""
        out = subprocess.run(
            ["bash", str(SCRIPT), "start"], env=self._env(), capture_output=True, text=True, timeout=120
        )
        assert out.returncode == 0, out.stderr
        self.url = out.stdout.strip().splitlines()[-1]
        self.port = int(self.url.rsplit(":", 1)[1].split("/")[0])  # the script may have moved on a busy port
        return self.url

    def _ctl(self, *args: str) -> subprocess.CompletedProcess[str]:
        binary = pg_bin()
        assert binary is not None
        cmd = [str(binary / "pg_ctl"), "-D", str(self.data), *args]
        if os.geteuid() == 0:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=120)

    def crash(self) -> None:
        """Stop the server at once (`-m immediate`: backends killed, no checkpoint: a crash)."""
        out = self._ctl("stop", "-m", "immediate", "-w")
        assert out.returncode == 0, out.stderr

    def start_again(self) -> None:
        options = (
            f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.data} -c fsync=off -c max_connections=200"
        )
        out = self._ctl("start", "-w", "-l", str(self.data / "server.log"), "-o", options)
        assert out.returncode == 0, out.stderr + (self.data / "server.log").read_text()[-2000:]

    def stop(self) -> None:
        subprocess.run(["bash", str(SCRIPT), "stop"], env=self._env(), capture_output=True, timeout=120)
