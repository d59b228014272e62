"""`proxyplane gateway`: a gateway node on its own against the shared store, as N worker processes under
a supervisor (gateway/workers.py); and the gateway part that `proxyplane serve` runs inside the API
process (one in-process node, with the in-process change fast path)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import AsyncIterator

import click

from proxyplane.cli import heap
from proxyplane.core.gateway_settings import GatewaySettings
from proxyplane.core.security import SecretBox
from proxyplane.core.settings import get_settings
from proxyplane.gateway.destinations import DestinationPolicy
from proxyplane.gateway.node import GatewayNode
from proxyplane.gateway.node_limits import NodeCounts
from proxyplane.gateway.own_listeners import api_listeners, gateway_listeners
from proxyplane.gateway.server import PortTaken
from proxyplane.gateway.workers import HostShared, Supervisor, default_workers, json_logs, say
from proxyplane.platform import Platform


@contextlib.asynccontextmanager
async def gateway_part(platform: Platform) -> AsyncIterator[GatewayNode | None]:
    """Lifespan part of `serve`: start a node, subscribe it to 'entitlements_changed', print listeners."""
    settings = GatewaySettings()  # loopback destinations only with PROXYPLANE_GATEWAY_DEV_ALLOW_LOOPBACK
    if not settings.in_serve:
        yield None
        return
    node = GatewayNode(platform.db, platform.secrets, settings, home=platform.settings.home)
    policy = node.gateway.ctx.destinations
    policy.add_own(api_listeners(platform.settings))  # `serve --host/--port` as really listened on
    origin = await _demo_origin(policy)
    try:
        await node.start()
        platform.on("entitlements_changed", node.notify)
        for line in node.listeners():
            say(f"  gateway        {line}")
        if settings.metrics_port >= 0:  # the gateway's metrics inside serve: its own port, as a gateway node
            await node.serve_metrics()
            server = node.metrics.server if node.metrics is not None else None
            if server is not None:
                port = own_metrics_port(node)
                say(
                    f"  gateway        metrics http://{settings.metrics_host}:{port}/metrics (/livez /readyz)"
                )
        try:
            yield node
        finally:
            await node.drain()  # uvicorn has drained the API; open tunnels get DRAIN_SECONDS
            await node.close()
    finally:
        if origin is not None:  # also when the node did not start
            origin.close()


def own_metrics_port(node: GatewayNode) -> int | None:
    """The node's metrics port as bound (port 0 too) is one of the platform's own: never a destination."""
    server = node.metrics.server if node.metrics is not None else None
    if server is None:
        return None
    host, port = server.sockets[0].getsockname()[:2]
    node.gateway.ctx.destinations.add_own([(str(host), int(port))])
    return int(port)


async def _demo_origin(policy: DestinationPolicy) -> asyncio.Server | None:
    """PROXYPLANE_DEMO_ORIGIN (run.sh): start the demo origin and let exactly it through the proxies."""
    from proxyplane.gateway import demo_origin

    where = demo_origin.configured()
    if where is None:
        return None
    host, port = where
    if port in policy.own_ports:
        say(f"  demo origin    not started: port {port} is one of the platform's own")
        return None
    try:
        server = await demo_origin.start(host, port)
    except OSError as exc:
        say(f"  demo origin    not started on {host}:{port}: {exc.strerror}")
        return None
    policy.allow(host, port)
    url = f"http://[{host}]:{port}/" if ":" in host else f"http://{host}:{port}/"
    say(f"  demo origin    {url}   (PROXYPLANE_DEMO_ORIGIN: the one loopback destination allowed)")
    return server


def as_worker(node: GatewayNode, shared: HostShared, worker: int) -> None:
    """Make a (not yet started) node worker ``worker`` of its host: connection counts and sticky
    sessions in the host's shared memory, the store row of connection counts per host."""
    limiter, router = shared.limiter(worker), shared.router()
    node.router = node.sticky.router = node.gateway.ctx.router = node.addresses.router = router
    node.gateway.ctx.limiter = limiter
    node.counts = NodeCounts(
        node.db,
        limiter,
        node.sticky.node_id,
        interval=node.settings.limit_refresh_seconds,
        client_ips=node.table.client_ips,  # each worker reports its own (issue 32.5)
    )


async def run_node(shared: HostShared | None = None, worker: int = 0, migrate: bool = True) -> None:
    from proxyplane.storage.engine import Database
    from proxyplane.storage.migrate import upgrade

    settings = get_settings()
    url = settings.resolved_database_url()
    if migrate:
        await upgrade(url)
    db = Database(url)
    node_id = f"{shared.host_id}-w{worker}" if shared is not None else None
    node = GatewayNode(
        db,
        SecretBox(settings.resolved_secret_key()),
        GatewaySettings(),
        home=settings.home,
        node_id=node_id,
        worker=worker,  # its usage spool: PROXYPLANE_HOME/usage-spool/w<worker>
    )
    if shared is not None:
        as_worker(node, shared, worker)
        # every worker's metrics port (METRICS_PORT + i) is the platform's own, not only this one's
        node.gateway.ctx.destinations.add_own(gateway_listeners(node.settings, shared.workers))
    await node.start()
    await node.serve_metrics(worker)  # PROXYPLANE_GATEWAY_METRICS_PORT + worker: /metrics /livez /readyz
    own_metrics_port(node)
    heap.settle()  # start-up's objects frozen: no full collection pass stalls the tunnels (cli/heap.py)
    if shared is not None:
        shared.stats.set_serving(worker, time.time())
    if shared is None:
        say(f"gateway node {node.sticky.node_id} on {url.split('://')[0]}")
    else:
        say(
            f"gateway worker {worker}/{shared.workers} pid {os.getpid()} host {shared.host_id} "
            f"node {node.sticky.node_id} on {url.split('://')[0]}"
        )
    for line in node.listeners() if worker == 0 else ():
        say(f"  {line}")
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        await node.drain()  # SIGTERM: stop accepting, let open tunnels finish (DRAIN_SECONDS)
        await node.close()  # then flush usage
        await db.dispose()


def run_workers(workers: int) -> int:
    """Migrate once, then supervise ``workers`` forked workers sharing the host's memory."""
    from proxyplane.storage.migrate import upgrade

    settings = get_settings()
    asyncio.run(upgrade(settings.resolved_database_url()))
    if threading.active_count() > 1:  # forking copies no threads: nothing may run in one now
        raise RuntimeError("threads running before the workers fork")
    shared = HostShared(workers)
    settings.home.mkdir(parents=True, exist_ok=True)

    def worker(index: int) -> None:
        asyncio.run(run_node(shared, index, migrate=False))

    grace = GatewaySettings().drain_seconds + 15.0  # the workers drain before the supervisor kills
    return Supervisor(shared, worker, status_path=settings.home / "gateway-workers.json", grace=grace).run()


@click.command()
@click.option(
    "--workers",
    type=int,
    default=None,
    help="Worker processes on the same ports (default: the number of CPUs); 0: one process.",
)
def gateway(workers: int | None) -> None:
    """Run a gateway node on its own against the shared store (PROXYPLANE_DATABASE_URL; PostgreSQL when
    scaled out), as N worker processes under a supervisor that restarts them (status:
    PROXYPLANE_HOME/gateway-workers.json). Ports: PROXYPLANE_GATEWAY_* (see
    proxyplane.core.gateway_settings); loopback only."""
    from proxyplane.gateway.server import install_uvloop
    from proxyplane.observability import logs

    logs.from_env()  # PROXYPLANE_LOG_FORMAT=json: one JSON object per line, secrets redacted
    install_uvloop()
    count = default_workers() if workers is None else workers
    if count <= 0:
        try:
            asyncio.run(run_node())
        except PortTaken as exc:
            if not json_logs():
                raise
            say(str(exc.code), sys.stderr, logging.ERROR)  # the one line, as a JSON event
            raise SystemExit(1) from None
        return
    raise SystemExit(run_workers(count))
