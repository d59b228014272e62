"""bench/platform.py at its small size, as CI runs each bench: real `proxyplane serve` processes (two on
PostgreSQL) take orders from concurrent buyers over HTTP, and the run ends with no order refused and every
invariant of issue 15 holding (the script's exit status). Figures are printed, never asserted."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.bench.databases import own_database

pytestmark = pytest.mark.anyio
ROOT = Path(__file__).resolve().parents[2]
INVARIANTS = (
    "no negative balance",
    "no oversold IP",
    "IP counts match live allocations",
    "ledger sums to every balance",
    "every service has its charge (or refund)",
    "zero double charges (one service per idempotency key)",
)


async def test_small_size_serves_every_order_and_every_invariant_holds(database_url: str) -> None:
    args = [sys.executable, str(ROOT / "bench" / "platform.py"), "--size", "small", "--no-data"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROXYPLANE_")}
    if database_url.startswith("postgresql"):
        async with own_database(database_url) as url:
            done = subprocess.run(
                [*args, "--no-sqlite", "--pg", url],
                cwd=ROOT,
                env=env,
                capture_output=True,
                text=True,
                timeout=600,
            )
    else:
        done = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    report = done.stdout
    assert done.returncode == 0, report[-3000:] + done.stderr[-3000:]
    assert "| orders refused or failed | 0 | 0 | yes |" in report, report
    for invariant in INVARIANTS:
        assert f"| invariant: {invariant} | 0 broken | 0 | yes |" in report, report
    if database_url.startswith("postgresql"):
        assert "| two serve processes vs one: orders/s |" in report
