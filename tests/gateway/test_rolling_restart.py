"""Rolling restart of two gateway nodes (issue 17.4): clients spread their tunnels over two `proxyplane
gateway` processes (a load balancer's round robin: a node that refuses the connection is skipped); node A
gets SIGTERM, drains and exits 0, is started again and becomes ready, then node B the same. Every tunnel
that had been answered 200 completes its whole transfer, and the stored usage grows by exactly the bytes
the clients relayed."""

from __future__ import annotations

import asyncio
import itertools
import signal
import subprocess
from pathlib import Path

import httpx
import pytest

from proxyplane.platform import Platform
from tests.observability.support import raw_get
from tests.support import Account

from .clients import basic, connect_tunnel
from .conftest import free_port
from .processes import start_gateway, usage
from .test_node_limits import limited_rotating
from .test_store_static import eventually

pytestmark = pytest.mark.anyio
CLIENTS = 8
ROUNDS = 4
CHUNK = b"r" * 1500


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Node:
    def __init__(self, name: str, tmp_path: Path, database_url: str) -> None:
        self.home, self.database_url = tmp_path / name, database_url
        self.port, self.metrics = free_port(["127.0.0.1"]), free_port(["127.0.0.1"])
        self.proc: subprocess.Popen[bytes] | None = None
        self.open = 0  # tunnels of the clients open through this node now

    def start(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("PROXYPLANE_GATEWAY_METRICS_PORT", str(self.metrics))  # workers: metrics, +1
        self.proc = start_gateway(self.database_url, self.home, self.port)

    async def ready(self) -> bool:
        for port in (self.metrics, self.metrics + 1):  # both workers
            try:
                if (await raw_get(port, "/readyz"))[0] != 200:
                    return False
            except (TimeoutError, OSError, IndexError, ValueError):
                return False
        return True

    async def stop(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        code = await asyncio.to_thread(self.proc.wait, 40)
        assert code == 0, self.proc.stdout.read().decode()[-3000:] if self.proc.stdout else ""

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


async def test_rolling_restart_of_two_nodes_loses_no_started_tunnel_and_no_usage(
    client: httpx.AsyncClient,
    platform: Platform,
    account: Account,
    tcp_echo,
    database_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sid, auth = await limited_rotating(client, platform, account, 0)
    proxy_auth = basic(auth["login"], auth["password"])
    target = f"127.0.0.1:{tcp_echo.port}"
    monkeypatch.setenv("PROXYPLANE_GATEWAY_DRAIN_SECONDS", "30")
    nodes = [Node("a", tmp_path, database_url), Node("b", tmp_path, database_url)]
    balancer = itertools.cycle(nodes)
    try:
        for node in nodes:
            node.start(monkeypatch)
        for node in nodes:
            await eventually(node.ready, within=30.0)
        before = await usage(platform, sid)
        stop = asyncio.Event()
        relayed: list[int] = []
        started = completed = 0

        async def tunnel() -> None:
            """One tunnel through the next node that accepts it; once answered 200 it must complete."""
            nonlocal started, completed
            for _ in range(20):
                node = next(balancer)
                try:
                    code, reader, writer = await connect_tunnel(("127.0.0.1", node.port), target, proxy_auth)
                except (TimeoutError, OSError, asyncio.IncompleteReadError):
                    continue  # refused or reset before the answer (draining node): the balancer's retry
                assert code == 200
                started += 1
                node.open += 1
                for _ in range(ROUNDS):
                    writer.write(CHUNK)
                    assert await asyncio.wait_for(reader.readexactly(len(CHUNK)), 10) == CHUNK
                    await asyncio.sleep(0.05)
                writer.close()
                node.open -= 1
                relayed.append(ROUNDS * len(CHUNK))
                completed += 1
                return
            raise AssertionError("no node accepted the tunnel in 20 tries")

        async def client_loop() -> None:
            while not stop.is_set():
                await tunnel()

        clients = [asyncio.ensure_future(client_loop()) for _ in range(CLIENTS)]
        await asyncio.sleep(1.0)
        open_at_sigterm = []
        for node in nodes:  # the rolling restart: one node at a time, under load
            served = completed
            open_at_sigterm.append(node.open)
            await node.stop()
            node.start(monkeypatch)
            await eventually(node.ready, within=30.0)
            await asyncio.sleep(0.5)
            assert completed > served  # the clients went on through the other node meanwhile
        await asyncio.sleep(0.5)
        stop.set()
        await asyncio.wait_for(asyncio.gather(*clients), 30)
        assert started == completed and completed > 0
        print(f"rolling restart: {completed} tunnels completed, open at each SIGTERM: {open_at_sigterm}")
        assert sum(open_at_sigterm) > 0, "no tunnel was open when a node got SIGTERM: nothing was drained"
        for node in nodes:  # the last flush of each node at its exit
            await node.stop()
    finally:
        for node in nodes:
            node.kill()
    after = await usage(platform, sid)
    sent = sum(relayed)
    assert after[0] - before[0] == sent and after[1] - before[1] == sent
