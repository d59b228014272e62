"""Start-up is safe for several processes at once (issue 17): two `proxyplane serve` started at the same
moment on an empty PostgreSQL database both migrate (one waits for the other), the demo stock is seeded once,
and both become ready. PostgreSQL only: the race is between processes on one shared store."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import create_async_engine

from proxyplane.domains.stock.seed import DEMO_PRODUCTS, demo_stock_lines
from proxyplane.domains.stock.seed_ipv6 import DEMO_IPV6_PRODUCTS

PROCESSES = 2
CLI = [sys.executable, "-c", "from proxyplane.cli import main; main()"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def ready(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as r:
            return r.status == 200
    except (urllib.error.URLError, OSError):
        return False


async def _admin(url: str, statement: str) -> None:
    engine = create_async_engine(url, isolation_level="AUTOCOMMIT")
    try:
        async with engine.connect() as conn:
            await conn.execute(text(statement))
    finally:
        await engine.dispose()


async def _count(url: str, statement: str) -> int:
    engine = create_async_engine(url)
    try:
        async with engine.connect() as conn:
            return int((await conn.execute(text(statement))).scalar_one())
    finally:
        await engine.dispose()


@pytest.fixture
def fresh_database(database_url: str) -> Iterator[str]:
    """An empty database next to the test database (same server), dropped afterwards."""
    if not database_url.startswith("postgresql"):
        pytest.skip("the start-up race is between processes on PostgreSQL (PROXYPLANE_TEST_DATABASE_URL)")
    base = make_url(database_url)
    name = f"{base.database}_race_{uuid.uuid4().hex[:8]}"
    asyncio.run(_admin(database_url, f'CREATE DATABASE "{name}"'))
    fresh = base.set(database=name).render_as_string(hide_password=False)
    yield fresh
    asyncio.run(_admin(database_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


def test_two_serve_processes_started_together_on_an_empty_database_both_become_ready(
    fresh_database: str, tmp_path: Path
) -> None:
    url = fresh_database
    env = {
        **os.environ,
        "PROXYPLANE_DATABASE_URL": url,
        "PROXYPLANE_SECRET_KEY": "test-secret-key",
        "PROXYPLANE_GATEWAY_IN_SERVE": "false",
        "PROXYPLANE_WORKER_IN_SERVE": "false",
        "PROXYPLANE_RENEWALS_IN_SERVE": "false",
    }
    env.pop("PROXYPLANE_LEGACY_PORT", None)
    ports = [free_port() for _ in range(PROCESSES)]
    procs = []
    for i, port in enumerate(ports):  # no wait between them: both migrate and seed at the same moment
        home = tmp_path / f"api{i}"
        home.mkdir()
        procs.append(
            subprocess.Popen(
                [*CLI, "serve", "--port", str(port)],
                env={**env, "PROXYPLANE_HOME": str(home)},
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
            )
        )
    try:
        deadline = time.monotonic() + 90
        waiting = set(range(PROCESSES))
        while waiting and time.monotonic() < deadline:
            for i in list(waiting):
                assert procs[i].poll() is None, f"serve {i} exited {procs[i].returncode}:\n" + (
                    procs[i].stdout.read().decode()[-3000:] if procs[i].stdout else ""
                )
                if ready(ports[i]):
                    waiting.discard(i)
            time.sleep(0.2)
        assert not waiting, f"not ready within 90 s: {sorted(waiting)}"
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        outputs = []
        for proc in procs:
            try:
                out, _ = proc.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                out, _ = proc.communicate()
            outputs.append(out.decode())
    # the stock was seeded exactly once: one process says so, the store holds each demo IP and product once
    assert sum("seeded demo stock" in out for out in outputs) == 1, outputs
    ips = sum(len(lines) for _, lines in demo_stock_lines())
    assert asyncio.run(_count(url, "SELECT count(*) FROM stock_ips")) == ips
    products = len(DEMO_PRODUCTS) + len(DEMO_IPV6_PRODUCTS)  # the demo's IPv6 product too (issue 30.12)
    assert asyncio.run(_count(url, "SELECT count(*) FROM catalog_products")) == products
