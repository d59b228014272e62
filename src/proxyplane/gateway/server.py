"""The gateway process: listeners for static services and for rotating services (on the gateway address),
plus the background jobs (usage flush, pool and idle sweeps).

Static services are served by ONE listening socket per static port and address family, bound to a wildcard
address (``static_bind``): the exit IP of a connection is the local address the client dialed (the accepted
socket's ``getsockname``), so a node serving a million exit IPs holds a handful of listening sockets. Every
listener sets SO_REUSEADDR and SO_REUSEPORT: worker processes share the ports, and Linux delivers a
connection to the most specific bound address, so the rotating gateway on e.g. 127.0.0.1:1080 and the static
wildcard 0.0.0.0:1080 coexist. A connection to a local address that is no static service's exit IP finds
no service (407 / SOCKS5 authentication refused, like unknown credentials)."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import ssl
import time
from dataclasses import dataclass

from . import metrics
from .access import AccessProvider
from .capacity import PER_CONNECTION, Capacity
from .context import Context, Settings
from .destinations import DestinationPolicy
from .http_conn import HttpProxyConnection
from .limits import ConnectionLimiter
from .metering import Meter, UsageSink
from .own_listeners import platform_listeners
from .routing import Router
from .socks_conn import Socks5Connection
from .tunnels import Listener, TunnelEngine, available
from .upstream import UpstreamPool

log = logging.getLogger(__name__)


@dataclass
class GatewayConfig:
    # rotating services: one shared gateway address
    gateway_host: str | None = "127.0.0.1"
    gateway_http_port: int | None = None
    gateway_https_port: int | None = None
    gateway_socks_port: int | None = None
    # static services: these ports on every exit IP of every static service (one wildcard listener per
    # port and address in static_bind; an address whose family the host lacks is skipped with a warning)
    static_bind: tuple[str, ...] = ("0.0.0.0", "::")
    static_http_port: int | None = None
    static_https_port: int | None = None
    static_socks_port: int | None = None
    ssl_context: ssl.SSLContext | None = None  # needed for the https ports
    flush_interval: float = 5.0
    backlog: int = 1024


class Gateway:
    def __init__(self, access: AccessProvider, config: GatewayConfig, *, settings: Settings | None = None,
                 router: Router | None = None, limiter: ConnectionLimiter | None = None,
                 meter: Meter | None = None, sink: UsageSink | None = None) -> None:
        settings = settings or Settings()
        self.config = config
        self.ctx = Context(access, router or Router(), limiter or ConnectionLimiter(), meter or Meter(),
                           settings, UpstreamPool(settings.max_idle_upstreams_per_destination,
                                                  settings.upstream_idle_timeout))
        self.ctx.destinations = DestinationPolicy(settings.deny_destinations, settings.allow_loopback)
        own = settings.own_listeners
        self.ctx.destinations.add_own(platform_listeners() if own is None else own)
        for address, port in settings.allow_destinations:
            self.ctx.destinations.allow(address, port)
        self.ctx.capacity = Capacity(settings.fd_reserve, settings.service_fd_share)
        self.sink = sink
        self._gateway_servers: dict[str, asyncio.Server | Listener] = {}
        self._static_servers: dict[str, dict[str, asyncio.Server | Listener]] = {}
        self.tunnels: TunnelEngine | None = None  # the C tunnel engine, when built and enabled
        self._jobs: list[asyncio.Task[None]] = []
        self.draining = False

    @property
    def access(self) -> AccessProvider:
        return self.ctx.access

    @property
    def router(self) -> Router:
        return self.ctx.router

    @property
    def meter(self) -> Meter:
        return self.ctx.meter

    @property
    def limiter(self) -> ConnectionLimiter:
        return self.ctx.limiter

    def _adopt(self, kind: int, static: bool) -> asyncio.Protocol:
        """The Python protocol for a connection the tunnel engine hands over."""
        from .tunnels import _tunnels

        assert _tunnels is not None
        if kind == _tunnels.KIND_SOCKS:
            return Socks5Connection(self.ctx, static)
        return HttpProxyConnection(self.ctx, static, False)

    async def _listen(self, host: str, port: int, kind: str, static: bool) -> asyncio.Server | Listener:
        """A listener on ``host:port``; a port taken or not permitted raises PortTaken (one line)."""
        try:
            return await self._bind(host, port, kind, static)
        except OSError as exc:
            if exc.errno in (errno.EADDRINUSE, errno.EACCES):
                raise PortTaken(host, port, kind, static, exc.errno) from None
            raise

    async def _bind(self, host: str, port: int, kind: str, static: bool) -> asyncio.Server | Listener:
        if self.tunnels is not None and kind != "https":
            return self.tunnels.listen(host, port, kind, static, self.config.backlog)
        loop = asyncio.get_running_loop()
        ctx = self.ctx
        tls = None
        if kind == "socks":
            def factory() -> asyncio.Protocol:
                return Socks5Connection(ctx, static)
        else:
            if kind == "https":
                if self.config.ssl_context is None:
                    raise ValueError("an https port needs GatewayConfig.ssl_context")
                tls = self.config.ssl_context

            def factory() -> asyncio.Protocol:
                return HttpProxyConnection(ctx, static, tls is not None)
        return await loop.create_server(factory, host, port, ssl=tls, backlog=self.config.backlog,
                                        reuse_address=True, reuse_port=True)

    async def start(self) -> None:
        cfg = self.config
        if self.ctx.settings.tunnel_engine and available():
            self.tunnels = TunnelEngine(self.ctx, self._adopt)
            self.tunnels.start(asyncio.get_running_loop())
        if cfg.gateway_host is not None:
            for kind, port in _ports(cfg.gateway_http_port, cfg.gateway_https_port, cfg.gateway_socks_port):
                self._gateway_servers[kind] = await self._listen(cfg.gateway_host, port, kind, False)
        await self.open_static_listeners()
        self.ctx.destinations.add_own(self.bound())  # port 0 resolved: what this process really listens on
        self._jobs.append(asyncio.ensure_future(self._sweeper()))
        if self.sink is not None:
            self._jobs.append(asyncio.ensure_future(self.ctx.meter.run(self.sink, cfg.flush_interval)))
        metrics.COLLECTOR.sources.add(self)

    def open_connections(self) -> int:
        """Client connections this process serves: admitted ones (holding a slot) and, on the tunnel
        engine, those still in their handshake."""
        admitted = self.ctx.capacity.total // PER_CONNECTION
        if self.tunnels is None:
            return admitted
        admitted -= self.tunnels.unused_slots()  # lent to the decision cache, no tunnel holds them
        return max(admitted, len(self.tunnels.conns))

    def gauges(self) -> dict[str, float]:
        """The live values metrics.NodeCollector exports."""
        capacity = self.ctx.capacity
        return {
            "active_tunnels": len(self.ctx.meter._flows) + (  # + those the decision cache opened
                int(self.tunnels.stats()["fast"]) if self.tunnels is not None else 0),
            "admitted_connections_open": capacity.total // PER_CONNECTION,
            "descriptor_budget": capacity.budget,
            "descriptors_charged": capacity.total,
            "draining": 1.0 if self.draining else 0.0,
        }

    def stop_accepting(self) -> None:
        """Close every listener; open connections go on (the first step of a drain)."""
        self.draining = True
        servers = list(self._gateway_servers.values())
        servers += [s for group in self._static_servers.values() for s in group.values()]
        for server in servers:
            server.close()

    async def drain(self, seconds: float, poll: float = 0.05) -> int:
        """Stop accepting, then wait up to ``seconds`` for the open connections to finish (the
        sweeper, the tunnel engine and the usage flush keep running). Returns the connections still
        open at the end (0: all finished)."""
        self.stop_accepting()
        deadline = time.monotonic() + seconds
        while self.open_connections() and time.monotonic() < deadline:
            await asyncio.sleep(poll)
        left = self.open_connections()
        if left:
            log.warning("drain: %d connection(s) still open after %.1f s; closing", left, seconds)
        return left

    def bound(self) -> list[tuple[str, int]]:
        """The (address, port) of every open listener."""
        servers = list(self._gateway_servers.values())
        servers += [s for group in self._static_servers.values() for s in group.values()]
        return [(str(name[0]), int(name[1])) for server in servers for name in
                (sock.getsockname() for sock in server.sockets)]

    def gateway_port(self, kind: str) -> int:
        """The bound port of a gateway listener (useful with port 0)."""
        return int(self._gateway_servers[kind].sockets[0].getsockname()[1])

    def static_port(self, ip: str, kind: str) -> int:
        """The bound port of the static listener that serves exit IP ``ip`` (the wildcard listener of
        its address family)."""
        v6 = ":" in ip
        for host, servers in self._static_servers.items():
            if (":" in host) == v6 and kind in servers:
                return int(servers[kind].sockets[0].getsockname()[1])
        raise KeyError(f"no static {kind} listener for {ip}")

    async def open_static_listeners(self) -> None:
        """One listener per static port on each wildcard address of ``static_bind`` (whatever the number
        of exit IPs); an address the host cannot bind (no IPv6) is skipped with a warning."""
        cfg = self.config
        ports = _ports(cfg.static_http_port, cfg.static_https_port, cfg.static_socks_port)
        for host in cfg.static_bind if ports else ():
            servers: dict[str, asyncio.Server | Listener] = {}
            for kind, port in ports:
                try:
                    servers[kind] = await self._listen(host, port, kind, True)
                except OSError as exc:  # an address family the host lacks (taken ports: PortTaken)
                    log.warning("static %s listener on %s port %s not opened: %s", kind, host, port, exc)
            if servers:
                self._static_servers[host] = servers

    def static_listeners(self) -> dict[str, list[str]]:
        """Bound address -> the kinds listening there (static listeners)."""
        return {host: sorted(servers) for host, servers in self._static_servers.items()}

    def static_ips(self) -> list[str]:
        """The exit IPs static services are served on (every IP of a static service in the access table,
        while the static listeners are open)."""
        return sorted(self.ctx.access.listen_ips()) if self._static_servers else []

    async def _sweeper(self) -> None:
        """Timeouts of every connection (handshake, connect, tunnel idle) at each ``sweep_interval``,
        idle pooled upstream connections every 5 s."""
        ctx = self.ctx
        interval = ctx.settings.sweep_interval
        next_pool = time.monotonic() + 5.0
        while True:
            await asyncio.sleep(interval)
            try:
                ctx.deadlines.sweep()
                ctx.capacity.refresh()
                if self.tunnels is not None:
                    self.tunnels.sweep()
                if time.monotonic() >= next_pool:
                    next_pool = time.monotonic() + 5.0
                    ctx.pool.sweep()
            except Exception:
                log.exception("timeout sweep failed")

    async def close(self) -> None:
        metrics.COLLECTOR.sources.discard(self)
        if self.tunnels is not None:  # first: the tunnels' last bytes go out with the final flush
            self.tunnels.close()
        for job in self._jobs:
            job.cancel()
        for job in self._jobs:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await job
        self._jobs.clear()
        servers = list(self._gateway_servers.values())
        servers += [s for group in self._static_servers.values() for s in group.values()]
        for server in servers:
            server.close()
        self._gateway_servers.clear()
        self._static_servers.clear()
        self.ctx.pool.close()
        for server in servers:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(server.wait_closed(), 1.0)


class PortTaken(SystemExit):
    """A gateway port already in use (or not permitted) at start: one line naming the address and the
    setting that moves it, and the process exits (status 1) instead of printing a traceback (issue 22.7).
    A SystemExit so that ``proxyplane gateway`` needs no handler of its own."""

    def __init__(self, host: str, port: int, kind: str, static: bool, code: int) -> None:
        setting = f"PROXYPLANE_GATEWAY_{'STATIC_' if static else ''}{kind.upper()}_PORT"
        where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        if code == errno.EADDRINUSE:
            text = (f"error: {where} is already in use ({setting}): stop the program holding it "
                    f"or set {setting} to a free port")
        else:
            text = (f"error: cannot listen on {where} ({setting}): permission denied; "
                    f"set {setting} to a port above 1023")
        super().__init__(text)
        self.setting, self.address = setting, where


def _ports(http: int | None, https: int | None, socks: int | None) -> list[tuple[str, int]]:
    return [(kind, port) for kind, port in (("http", http), ("https", https), ("socks", socks))
            if port is not None]


def install_uvloop() -> bool:
    """Use uvloop's event loop policy when it is installed."""
    try:
        import uvloop
    except ImportError:
        return False
    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    return True
