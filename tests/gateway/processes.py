"""`proxyplane gateway --workers 2` as a child process on loopback against the test store, shared by the
process tests (test_workers, test_drain, test_rolling_restart): start it, read its workers' status file,
and sum the usage it flushed for a service."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

from sqlalchemy import func, select

from proxyplane.platform import Platform
from proxyplane.storage.models.gateway import UsageMinute


def start_gateway(database_url: str, home: Path, port: int) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "PROXYPLANE_DATABASE_URL": database_url,
        "PROXYPLANE_SECRET_KEY": "test-secret-key",  # as tests/conftest.py
        "PROXYPLANE_HOME": str(home),
        "PROXYPLANE_GATEWAY_HTTP_PORT": str(port),
        "PROXYPLANE_GATEWAY_HTTPS_PORT": "-1",
        "PROXYPLANE_GATEWAY_SOCKS_PORT": "-1",
        "PROXYPLANE_GATEWAY_STATIC_HTTP_PORT": "-1",
        "PROXYPLANE_GATEWAY_STATIC_HTTPS_PORT": "-1",
        "PROXYPLANE_GATEWAY_STATIC_SOCKS_PORT": "-1",
        "PROXYPLANE_GATEWAY_DEV_ALLOW_LOOPBACK": "true",
        "PROXYPLANE_GATEWAY_USAGE_FLUSH_SECONDS": "1",
        "PROXYPLANE_GATEWAY_LIMIT_REFRESH_SECONDS": "0.25",
        # SIGTERM drains open tunnels this long (the test's echo server cannot answer while it waits)
        "PROXYPLANE_GATEWAY_DRAIN_SECONDS": os.environ.get("PROXYPLANE_GATEWAY_DRAIN_SECONDS", "1"),
    }
    code = "from proxyplane.cli import main; main()"
    return subprocess.Popen(
        [sys.executable, "-c", code, "gateway", "--workers", "2"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )


def status(home: Path) -> dict:
    """The supervisor's status file (rewritten every second); {} before the first write."""
    try:
        return json.loads((home / "gateway-workers.json").read_text())
    except (OSError, ValueError):
        return {}


async def usage(platform: Platform, sid: str) -> tuple[int, int]:
    """(bytes up, bytes down) of the service's stored usage minutes."""
    async with platform.db.unit_of_work(write=False) as uow:
        up, down = (
            await uow.session.execute(
                select(func.sum(UsageMinute.bytes_up), func.sum(UsageMinute.bytes_down)).where(
                    UsageMinute.service_id == uuid.UUID(sid)
                )
            )
        ).one()
    return int(up or 0), int(down or 0)
