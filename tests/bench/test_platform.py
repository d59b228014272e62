"""bench/platform.py at its small size, as CI runs each bench: real `proxyplane serve` processes (two on
PostgreSQL) take orders from concurrent buyers over HTTP, and the run ends with no order refused and every
invariant of issue 15 holding (the script's exit status). Figures are printed, never asserted."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

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


async def _database(url: str, name: str, create: bool) -> None:
    """Create or drop database `name` on the server of `url` (the bench drops the schema it is given: it
    gets one of its own, never the suite's)."""
    admin = create_async_engine(url.rsplit("/", 1)[0] + "/postgres", isolation_level="AUTOCOMMIT")
    try:
        async with admin.connect() as conn:
            sql = f'CREATE DATABASE "{name}"' if create else f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'
            await conn.execute(text(sql))
    finally:
        await admin.dispose()


async def test_small_size_serves_every_order_and_every_invariant_holds(database_url: str) -> None:
    args = [sys.executable, str(ROOT / "bench" / "platform.py"), "--size", "small", "--no-data"]
    name = ""
    if database_url.startswith("postgresql"):
        name = f"pp_bench_{uuid.uuid4().hex[:8]}"
        await _database(database_url, name, create=True)
        args += ["--no-sqlite", "--pg", database_url.rsplit("/", 1)[0] + "/" + name]
    try:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PROXYPLANE_")}
        done = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    finally:
        if name:
            await _database(database_url, name, create=False)
    report = done.stdout
    assert done.returncode == 0, report[-3000:] + done.stderr[-3000:]
    assert "| orders refused or failed | 0 | 0 | yes |" in report, report
    for invariant in INVARIANTS:
        assert f"| invariant: {invariant} | 0 broken | 0 | yes |" in report, report
    if name:
        assert "| two serve processes vs one: orders/s |" in report
