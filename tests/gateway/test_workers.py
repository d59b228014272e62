"""`proxyplane gateway --workers 2` as a real process tree on loopback against the test store: both
workers accept on the same port, a sticky sid leaves from one exit IP whichever worker takes it, a
service's limit of 3 concurrent connections holds across them, the usage rows they flush add up to
exactly the bytes relayed, a killed worker is restarted and its connections released, and SIGTERM stops
everything cleanly."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
from pathlib import Path

import httpx
import pytest
from sqlalchemy import select

from proxyplane.platform import Platform
from proxyplane.storage.models.gateway_health import GatewayNodeConnections
from tests.support import Account

from .clients import basic, connect_tunnel
from .conftest import free_port
from .processes import start_gateway, status, usage
from .test_node_limits import limited_rotating
from .test_store_static import eventually

pytestmark = pytest.mark.anyio
LIMIT = 3


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_two_workers_share_limits_and_usage(
    client: httpx.AsyncClient,
    platform: Platform,
    account: Account,
    tcp_echo,
    database_url: str,
    tmp_path: Path,
) -> None:
    sid, auth = await limited_rotating(client, platform, account, LIMIT)
    proxy_auth = basic(auth["login"], auth["password"])
    port = free_port(["127.0.0.1"])
    proxy, target = ("127.0.0.1", port), f"127.0.0.1:{tcp_echo.port}"
    sent = 0

    async def tunnel(payload: bytes, user: str = "") -> tuple[int, asyncio.StreamWriter | None]:
        """A CONNECT to the echo server; on 200 ``payload`` goes through and comes back."""
        nonlocal sent
        credentials = basic(user, auth["password"]) if user else proxy_auth
        try:
            code, reader, writer = await connect_tunnel(proxy, target, credentials)
        except OSError:
            return 0, None
        if code != 200:
            writer.close()
            return code, None
        writer.write(payload)
        assert await asyncio.wait_for(reader.readexactly(len(payload)), 5) == payload
        sent += len(payload)
        return code, writer

    home = tmp_path / "gw"
    proc = start_gateway(database_url, home, port)
    try:

        async def ready() -> bool:
            code, writer = await tunnel(b"ready")
            if writer is not None:
                writer.close()
            return code == 200 and len([p for p in status(home).get("processes", []) if p["serving"]]) == 2

        await eventually(ready, within=30.0)
        # both workers accept on the one port: sequential tunnels land on both (SO_REUSEPORT)
        for i in range(30):
            code, writer = await tunnel(b"x" * (100 + i))
            assert code == 200 and writer is not None
            writer.close()

        async def both_admitted() -> bool:  # the status file is rewritten every second
            return all(p["admitted"] > 0 for p in status(home)["processes"])

        await eventually(both_admitted, within=3.0)
        # sticky sessions: a sid leaves from one exit IP whichever worker takes the connection (the
        # shared table, not the store's 0.25 s sync); without a sid the exit IPs rotate
        admitted_before = [p["admitted"] for p in status(home)["processes"]]
        by_sid: dict[str, set[str]] = {}
        for _ in range(6):
            for n in range(6):
                code, writer = await tunnel(b"sticky", f"{auth['login']}-session-w{n}")
                assert code == 200 and writer is not None
                by_sid.setdefault(f"w{n}", set()).add(tcp_echo.peers[-1])
                writer.close()
        assert all(len(ips) == 1 for ips in by_sid.values()), by_sid
        rotating = set()
        for _ in range(12):
            code, writer = await tunnel(b"rotating")
            assert writer is not None
            rotating.add(tcp_echo.peers[-1])
            writer.close()
        assert len(rotating) > 1  # several exit IPs, so one IP per sid is not a coincidence

        async def both_took_sticky() -> bool:
            now = [p["admitted"] for p in status(home)["processes"]]
            return all(a - b >= 5 for a, b in zip(now, admitted_before, strict=True))

        await eventually(both_took_sticky, within=3.0)
        # the limit of 3 holds across the two workers: 30 concurrent attempts, exactly 3 admitted
        await asyncio.sleep(0.3)  # the closed tunnels above have been released
        results = await asyncio.gather(*(tunnel(b"held" * 50) for _ in range(30)))
        held = [w for code, w in results if code == 200 and w is not None]
        assert len(held) == LIMIT and sorted({c for c, _ in results}) == [200, 429]

        async def open_are(n: int) -> bool:
            return sum(p["open"] for p in status(home)["processes"]) == n

        await eventually(lambda: open_are(LIMIT), within=3.0)
        procs = status(home)["processes"]

        async def host_row_is(n: int) -> bool:  # worker 0 publishes the host's total, one row
            host = status(home)["host"]
            async with platform.db.unit_of_work(write=False) as uow:
                rows = (
                    (
                        await uow.session.execute(
                            select(GatewayNodeConnections).where(GatewayNodeConnections.node_id == host)
                        )
                    )
                    .scalars()
                    .all()
                )
            return len(rows) == 1 and rows[0].counts.get(sid, 0) == n

        await eventually(lambda: host_row_is(LIMIT), within=5.0)

        # usage: both workers' flushes add up to exactly the bytes relayed
        async def usage_is_exact() -> bool:
            return await usage(platform, sid) == (sent, sent)

        await eventually(usage_is_exact, within=10.0)
        # a worker killed with tunnels open: restarted, and its slots freed (no leak)
        victim = max(procs, key=lambda p: p["open"])
        os.kill(victim["pid"], signal.SIGKILL)

        async def restarted() -> bool:
            p = status(home)["processes"][victim["worker"]]
            return p["pid"] not in (0, victim["pid"]) and p["restarts"] == 1 and p["serving"] > 0

        await eventually(restarted, within=10.0)
        results = await asyncio.gather(*(tunnel(b"again") for _ in range(20)))
        again = [w for code, w in results if code == 200 and w is not None]
        assert len(again) == victim["open"]  # exactly the freed slots; the survivors' still count
        for w in held + again:
            w.close()
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            out = proc.communicate(timeout=30)[0].decode(errors="replace")
        except subprocess.TimeoutExpired:
            proc.kill()
            out = proc.communicate()[0].decode(errors="replace")
    assert proc.returncode == 0, out
    assert "gateway worker 0/2 pid" in out and "gateway worker 1/2 pid" in out and "stopped" in out
