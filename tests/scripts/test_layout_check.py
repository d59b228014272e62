"""The documented multi-host layout (docs/deploy.md) on loopback as scripts/layout_check.py starts it: two API
processes, two gateway nodes and a worker on the test PostgreSQL, readiness and metrics checked, all stopped
cleanly (issue 17). PostgreSQL only: the layout is several processes on one shared store."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "layout_check.py"


def test_documented_layout_starts_is_ready_and_stops(database_url: str) -> None:
    if not database_url.startswith("postgresql"):
        pytest.skip("the multi-process layout runs on PostgreSQL (PROXYPLANE_TEST_DATABASE_URL)")
    run = subprocess.run([sys.executable, str(SCRIPT), database_url], capture_output=True, text=True,
                         timeout=240)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    assert "ok" in run.stdout
