"""A gateway node through a store outage (issue 35.1, at a small size; bench/faults.py runs it longer):
`proxyplane gateway --workers 2` on PostgreSQL behind a link the test cuts. While the store is gone the
node serves its known customer, says "degraded" on /readyz, and is SIGTERMed; its usage waits in the
spool; the next start replays it when the store is back: the stored bytes equal those relayed, once."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import threading
from pathlib import Path

import httpx
import pytest
from sqlalchemy import delete, select

from proxyplane.platform import Platform
from proxyplane.storage.models.gateway_nodes import GatewayNodeAddresses
from tests.gateway.clients import basic, connect_tunnel
from tests.gateway.conftest import free_port
from tests.gateway.processes import start_gateway, status, usage
from tests.gateway.test_node_limits import limited_rotating
from tests.gateway.test_store_static import eventually
from tests.observability.support import raw_get
from tests.support import Account

from .support import StoreLink

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(
        not os.environ.get("PROXYPLANE_TEST_DATABASE_URL"), reason="a store shared by processes: PostgreSQL"
    ),
]
CHUNK = b"u" * 5000
OUTAGE_SECONDS = float(os.environ.get("PROXYPLANE_FAULT_OUTAGE_SECONDS", "4"))


def collect(proc: subprocess.Popen[bytes]) -> list[bytes]:
    """The process's output, read as it comes (a full pipe would stop its writer)."""
    lines: list[bytes] = []

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)

    threading.Thread(target=read, daemon=True).start()
    return lines


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_outage_sigterm_restart_loses_no_usage(
    client: httpx.AsyncClient,
    platform: Platform,
    account: Account,
    tcp_echo,
    database_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sid, auth = await limited_rotating(client, platform, account, 0)
    nodes_before = await node_rows(platform)
    proxy_auth = basic(auth["login"], auth["password"])
    port, metrics = free_port(["127.0.0.1"]), free_port(["127.0.0.1"])
    monkeypatch.setenv("PROXYPLANE_GATEWAY_METRICS_PORT", str(metrics))
    proxy, target = ("127.0.0.1", port), f"127.0.0.1:{tcp_echo.port}"
    link = StoreLink.for_url(database_url)
    await link.up()
    home = tmp_path / "gw"
    sent = served = refused = 0

    async def one() -> None:
        nonlocal sent, served, refused
        try:
            code, reader, writer = await connect_tunnel(proxy, target, proxy_auth)
        except OSError:
            refused += 1
            return
        if code != 200:
            refused += 1
            writer.close()
            return
        writer.write(CHUNK)
        assert await asyncio.wait_for(reader.readexactly(len(CHUNK)), 10) == CHUNK
        writer.close()
        sent += len(CHUNK)
        served += 1

    proc = start_gateway(link.url(database_url), home, port)
    logs = [collect(proc)]
    try:

        async def ready() -> bool:
            serving = [p for p in status(home).get("processes", []) if p["serving"]]
            return len(serving) == 2

        try:
            await eventually(ready, within=60.0)
        except AssertionError:
            raise AssertionError(b"".join(logs[0]).decode()[-3000:]) from None
        before = await usage(platform, sid)
        for _ in range(10):
            await one()
        await link.cut()  # the store is gone for the gateway
        loop = asyncio.get_running_loop()
        end = loop.time() + OUTAGE_SECONDS
        while loop.time() < end:
            for _ in range(5):
                await one()
            await asyncio.sleep(0.2)
        code, body = await raw_get(metrics, "/readyz")
        assert code == 200 and "degraded: store unreachable" in body, body
        assert refused == 0 and served > 10
        outage_sent = sent
        proc.send_signal(signal.SIGTERM)  # during the outage
        assert await asyncio.to_thread(proc.wait, 30) == 0, b"".join(logs[0]).decode()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    # the outage is in the log once per loop, not once per retry (no traceback storm)
    assert b"".join(logs[0]).count(b"Traceback") < 20, b"".join(logs[0]).decode()[-3000:]
    spooled = list(home.glob("usage-spool/*/*.usage"))
    assert spooled, "the outage's usage should wait in the spool"
    spool_bytes = sum(p.stat().st_size for p in spooled)
    assert await usage(platform, sid) != (before[0] + sent, before[1] + sent)
    await link.up()  # the store is back; the node starts again
    proc = start_gateway(link.url(database_url), home, port)
    logs.append(collect(proc))
    try:

        async def replayed() -> bool:
            return await usage(platform, sid) == (before[0] + sent, before[1] + sent)

        replay_start = loop.time()
        try:
            await eventually(replayed, within=60.0)
        except AssertionError:
            got = await usage(platform, sid)
            left = [(p, p.stat().st_size) for p in home.glob("usage-spool/*/*")]
            raise AssertionError(
                f"stored {got}, expected {(before[0] + sent, before[1] + sent)}, spool {left}\n"
                + b"".join(logs[1]).decode()[-3000:]
            ) from None
        replay_seconds = loop.time() - replay_start
        await asyncio.sleep(2.5)  # another writer pass: nothing is applied twice
        assert await usage(platform, sid) == (before[0] + sent, before[1] + sent)
        assert not list(home.glob("usage-spool/*/*.usage"))
        print(
            f"\nfault figures: outage {OUTAGE_SECONDS:.0f} s | requests served {served}, refused {refused} "
            f"(goal: 100 % served) | relayed {sent} bytes ({outage_sent} until SIGTERM) | spooled "
            f"{len(spooled)} batches, {spool_bytes} bytes | replayed into the store {replay_seconds:.1f} s "
            f"after the restart | usage lost 0 bytes (goal 0), applied twice 0",
            flush=True,
        )
        proc.send_signal(signal.SIGTERM)
        assert await asyncio.to_thread(proc.wait, 30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        await link.cut()
        # a node SIGTERMed while the store was gone could not delete its address row; it would read as a live
        # node for STALE seconds to the tests that follow (the store is shared)
        async with platform.db.unit_of_work(write=True) as uow:
            await uow.session.execute(delete(GatewayNodeAddresses).where(
                GatewayNodeAddresses.node_id.not_in(nodes_before or [""])))
            await uow.commit()


async def node_rows(platform: Platform) -> list[str]:
    async with platform.db.unit_of_work(write=False) as uow:
        return list((await uow.session.execute(select(GatewayNodeAddresses.node_id))).scalars())
