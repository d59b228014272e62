"""`proxyplane gateway --workers 2` as a real process tree against the test store, selling an upstream pool
(issue 36.4): a sticky session moved to the second supplier when the first died stays there on both
workers once the first is back, and both workers take its connections. The first supplier is a pproxy
process (the origin sees 127.0.0.1), the second a supplier gateway in this process (exits 127.0.3.x)."""

from __future__ import annotations

import signal
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import delete

from proxyplane.gateway.server import Gateway
from proxyplane.platform import Platform
from proxyplane.storage.models.upstreams import Upstream
from tests.domains.operators.helpers import run
from tests.domains.subusers.support import make_service
from tests.domains.upstreams.suppliers import free_tcp_port, pproxy
from tests.support import Account

from .conftest import free_port
from .processes import start_gateway, status
from .test_store_static import eventually
from .test_upstream_pools import TEMPLATE, supplier
from .test_upstream_sessions import exit_seen

pytestmark = pytest.mark.anyio
__all__ = ["supplier"]
PASSWORD = "service-password"  # tests/domains/subusers/support.make_service


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_a_moved_session_holds_on_both_worker_processes(
    platform: Platform, account: Account, supplier: Gateway, origin: Any, database_url: str, tmp_path: Path
) -> None:
    pool = f"w{uuid.uuid4().hex[:10]}"
    svc = await make_service(platform, account, parameters={"upstream_pool": pool})
    first_port = free_tcp_port()
    await run(platform, "operator_upstream_add", pool=pool, scheme="http", host="127.0.0.1", port=first_port,
              username="acct", password="sup-pw")
    await run(platform, "operator_upstream_add", pool=pool, scheme="http", host="127.0.0.1",
              port=supplier.gateway_port("http"), username="acct", password="sup-pw", template=TEMPLATE)
    port = free_port(["127.0.0.1"])
    http, home = ("127.0.0.1", port), tmp_path / "gw"
    login = f"{svc.login}-session-s1"
    proc = start_gateway(database_url, home, port)
    try:
        async with pproxy("http", "acct", "sup-pw", port=first_port):

            async def ready() -> bool:
                try:
                    seen = await exit_seen(http, f"{svc.login}-session-probe", PASSWORD, origin.port)
                except (OSError, AssertionError):
                    return False
                return seen == "127.0.0.1" and len([p for p in status(home).get("processes", [])
                                                    if p["serving"]]) == 2

            await eventually(ready, within=30.0)
            assert await exit_seen(http, login, PASSWORD, origin.port) == "127.0.0.1"  # on pproxy
        moved = await exit_seen(http, login, PASSWORD, origin.port)  # pproxy died: the next supplier
        assert moved.startswith("127.0.3.")
        async with pproxy("http", "acct", "sup-pw", port=first_port):  # back on its port
            before = [p["admitted"] for p in status(home)["processes"]]
            for _ in range(16):
                assert await exit_seen(http, login, PASSWORD, origin.port) == moved

            async def both_took_part() -> bool:  # the status file is rewritten every second
                now = [p["admitted"] for p in status(home)["processes"]]
                return all(a > b for a, b in zip(now, before, strict=True))

            await eventually(both_took_part, within=3.0)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        async with platform.db.unit_of_work() as uow:
            await uow.session.execute(delete(Upstream).where(Upstream.pool == pool))
            await uow.commit()
