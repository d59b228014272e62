"""Graceful restart (issue 17.4): SIGTERM on `proxyplane gateway --workers 2` while 50 tunnels are
transferring. The node stops accepting at once (readiness 503, new connections refused), every open tunnel
finishes its transfer, usage is flushed (the store's bytes are exactly those relayed), then it exits 0."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

import httpx
import pytest

from proxyplane.platform import Platform
from tests.observability.support import raw_get
from tests.support import Account

from .clients import basic, connect_tunnel
from .conftest import free_port
from .processes import start_gateway, status, usage
from .test_node_limits import limited_rotating
from .test_store_static import eventually

pytestmark = pytest.mark.anyio
TUNNELS = 50
CHUNK = b"d" * 2000


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_sigterm_drains_50_transferring_tunnels_and_flushes_usage(
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
    port = free_port(["127.0.0.1"])
    metrics = free_port(["127.0.0.1"])  # worker 0's; worker 1 serves metrics + 1
    proxy, target = ("127.0.0.1", port), f"127.0.0.1:{tcp_echo.port}"
    monkeypatch.setenv("PROXYPLANE_GATEWAY_DRAIN_SECONDS", "30")
    monkeypatch.setenv("PROXYPLANE_GATEWAY_METRICS_PORT", str(metrics))
    home = tmp_path / "gw"
    proc = start_gateway(database_url, home, port)
    try:

        async def ready() -> bool:
            try:
                code, _, writer = await connect_tunnel(proxy, target, proxy_auth)
            except OSError:
                return False
            writer.close()
            serving = [p for p in status(home).get("processes", []) if p["serving"]]
            return code == 200 and len(serving) == 2

        await eventually(ready, within=30.0)
        assert (await raw_get(metrics, "/readyz"))[0] == 200
        before = await usage(platform, sid)

        tunnels = []
        for _ in range(TUNNELS):
            code, reader, writer = await connect_tunnel(proxy, target, proxy_auth)
            assert code == 200
            tunnels.append((reader, writer))

        async def transfer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, rounds: int) -> int:
            for _ in range(rounds):
                writer.write(CHUNK)
                assert await asyncio.wait_for(reader.readexactly(len(CHUNK)), 10) == CHUNK
                await asyncio.sleep(0.05)
            return rounds * len(CHUNK)

        sent = sum(await asyncio.gather(*(transfer(r, w, 2) for r, w in tunnels)))
        proc.send_signal(signal.SIGTERM)  # the supervisor forwards it to both workers

        async def refusing() -> bool:
            try:
                _, _, writer = await connect_tunnel(proxy, target, proxy_auth)
            except (OSError, asyncio.IncompleteReadError):  # refused, or reset from a closed backlog
                return True
            writer.close()
            return False

        await eventually(refusing, within=5.0)
        assert (await raw_get(metrics, "/readyz"))[0] == 503  # draining
        # the open tunnels go on transferring after SIGTERM, then close
        sent += sum(await asyncio.gather(*(transfer(r, w, 10) for r, w in tunnels)))
        assert proc.poll() is None  # still draining until the last tunnel closes
        for _, writer in tunnels:
            writer.close()
        code = await asyncio.to_thread(proc.wait, 30)
        assert code == 0, proc.stdout.read().decode() if proc.stdout else ""
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    after = await usage(platform, sid)
    assert after[0] - before[0] == sent and after[1] - before[1] == sent  # every byte flushed at exit


@pytest.mark.parametrize("path", ["engine", "python"])
async def test_drain_in_process_on_both_tunnel_paths(
    client: httpx.AsyncClient,
    platform: Platform,
    account: Account,
    tcp_echo,
    tmp_path: Path,
    path,
    monkeypatch,
) -> None:
    """The node's drain itself, on the C engine and on the pure-Python protocols: listeners closed at once,
    open tunnels go on, drain() returns as soon as the last one closes (0 left), usage exact."""
    from proxyplane.gateway import server as server_module
    from proxyplane.gateway.node import GatewayNode
    from tests.observability.support import static_service

    from .test_store_static import node_settings

    if path == "python":
        monkeypatch.setattr(server_module, "available", lambda: False)
    svc = await static_service(client, platform, account)
    settings = node_settings([svc.exit_ip])
    node = GatewayNode(platform.db, platform.secrets, settings, home=tmp_path)
    await node.start()
    proxy, auth = (svc.exit_ip, settings.static_http_port), basic(svc.login, svc.password)
    target = f"127.0.0.1:{tcp_echo.port}"
    try:
        before = await usage(platform, svc.service_id)
        tunnels = []
        for _ in range(10):
            code, reader, writer = await connect_tunnel(proxy, target, auth)
            assert code == 200
            tunnels.append((reader, writer))
        draining = asyncio.ensure_future(node.drain(20.0))
        await asyncio.sleep(0.2)
        assert node.not_ready() == "draining" and not draining.done()
        with pytest.raises((OSError, asyncio.IncompleteReadError)):
            await connect_tunnel(proxy, target, auth)
        for reader, writer in tunnels:
            writer.write(CHUNK)
            assert await asyncio.wait_for(reader.readexactly(len(CHUNK)), 5) == CHUNK
            writer.close()
        assert await asyncio.wait_for(draining, 10) == 0
    finally:
        await node.close()  # the final flush
    after = await usage(platform, svc.service_id)
    assert after[0] - before[0] == 10 * len(CHUNK) and after[1] - before[1] == 10 * len(CHUNK)
