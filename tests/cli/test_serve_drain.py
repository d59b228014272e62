"""The API drains in-flight requests on SIGTERM (issue 17.4): a `proxyplane serve` process gets SIGTERM while
a customer's request is waiting for the database (the test holds the lock the request's write needs: an
EXCLUSIVE table lock on PostgreSQL, the write transaction on SQLite); the listener closes at once, the
request completes with its real answer once the lock is released about a second later, and the process
then exits cleanly. No test-only path in the product: the slow part is a real wait on the store."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from sqlalchemy import func, select, text

from proxyplane.platform import Platform
from proxyplane.storage.models import Ticket
from tests.support import Account, bearer

from .test_serve_startup_race import free_port, ready

pytestmark = pytest.mark.anyio
TICKETS = "/api/v1/customer/tickets"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_sigterm_lets_a_slow_in_flight_request_complete(
    platform: Platform, account: Account, database_url: str, tmp_path: Path
) -> None:
    key = await account.key({"tickets:read", "tickets:write"})
    port = free_port()
    env = {
        **os.environ,
        "PROXYPLANE_DATABASE_URL": database_url,
        "PROXYPLANE_SECRET_KEY": "test-secret-key",  # as tests/conftest.py: the key above is valid there
        "PROXYPLANE_HOME": str(tmp_path / "api"),
        "PROXYPLANE_GATEWAY_IN_SERVE": "false",
        "PROXYPLANE_WORKER_IN_SERVE": "false",
        "PROXYPLANE_RENEWALS_IN_SERVE": "false",
        "PROXYPLANE_GRACEFUL_SHUTDOWN_SECONDS": "30",
    }
    env.pop("PROXYPLANE_LEGACY_PORT", None)
    cli = [sys.executable, "-c", "from proxyplane.cli import main; main()", "serve", "--port", str(port)]
    proc = subprocess.Popen(cli, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        for _ in range(300):
            assert proc.poll() is None, proc.stdout.read().decode()[-3000:] if proc.stdout else ""
            if await asyncio.to_thread(ready, port):
                break
            await asyncio.sleep(0.2)
        else:
            raise AssertionError("serve not ready within 60 s")
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=60) as http:
            async with platform.db.unit_of_work(write=True) as lock:  # SQLite: BEGIN IMMEDIATE
                if not platform.db.is_sqlite:
                    await lock.session.execute(text("LOCK TABLE tickets IN EXCLUSIVE MODE"))
                else:
                    await lock.session.execute(text("UPDATE tickets SET subject = subject WHERE 1 = 0"))
                request = asyncio.ensure_future(
                    http.post(TICKETS, json={"subject": "drain", "message": "in flight"}, headers=bearer(key))
                )
                await asyncio.sleep(0.7)  # the request is in, waiting for the lock
                assert not request.done()
                proc.send_signal(signal.SIGTERM)
                await asyncio.sleep(1.0)
                assert proc.poll() is None and not request.done()  # draining: waits for the request
                with pytest.raises(OSError):  # the listener is closed: new connections go elsewhere
                    await asyncio.open_connection("127.0.0.1", port)
                await lock.rollback()  # the store answers again
            response = await asyncio.wait_for(request, 30)
        assert response.status_code == 201, response.text
        ticket_id = response.json()["ticket_id"]
        code = await asyncio.to_thread(proc.wait, 30)
        assert code in (0, -signal.SIGTERM), proc.stdout.read().decode()[-3000:] if proc.stdout else ""
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    async with platform.db.unit_of_work(write=False) as uow:
        stored = await uow.session.scalar(
            select(func.count()).select_from(Ticket).where(Ticket.customer_id == account.customer_id)
        )
    assert ticket_id and stored == 1  # the request's write committed before the process exited
