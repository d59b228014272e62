"""CONNECT and SOCKS5 tunnels through the C tunnel engine (``csrc/``, module ``_tunnels``): the engine
moves the bytes, this module (and ``tunnel_socks.py``) makes every decision.

The engine accepts on the plain HTTP and SOCKS5 listeners, frames handshakes, opens upstream
connections and relays; it hands this module one event per decision (a CONNECT head, SOCKS5
credentials, a SOCKS5 request, a failed connect, an ended connection). The decisions are the same
calls the pure-Python protocol classes make (``authenticate``, ``Router.choose``, the limiter, the
destination policy, the meter), with the same replies and error categories. Connections the engine
does not serve itself (plain HTTP requests, malformed greetings, UDP ASSOCIATE) are handed over whole
to ``HttpProxyConnection`` / ``Socks5Connection`` before the engine wrote a byte (UDP: after the
request, in the state that request left it).

Byte counts reach the tunnel's metering ``Flow`` whenever the meter harvests (``pull_counts``) and when
the tunnel ends, so usage is as exact as on the pure-Python path.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import logging
import socket
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from . import engine_module, tunnel_connect
from .admission import release_slot
from .fastpath import FastPath
from .protocol.http_proxy import MAX_HEAD, ConnectRequest
from .protocol.http_response import CONNECT_ESTABLISHED, build_reply
from .tunnel_records import ListenerClosed, Tunnel, socks_reply
from .upstream import UpstreamError

if TYPE_CHECKING:
    from .context import Context

__all__ = ["Listener", "ListenerClosed", "Tunnel", "TunnelEngine", "available", "socks_reply"]

# None when not built (not Linux, or no compiler) or stale (engine_module.py): the pure-Python path
_tunnels = engine_module.load()

log = logging.getLogger(__name__)

# bytes read per relay recv (one shared buffer; only what a peer cannot take at once is queued per
# tunnel): 256 KiB measured 15-20 % less CPU per MB than 64 KiB (bench/README.md), like uvloop's reads
RELAY_READ = 256 * 1024


def available() -> bool:
    """Whether the C tunnel engine was built for this platform."""
    return _tunnels is not None


class Listener:
    """A listening socket served by the engine; looks like ``asyncio.Server`` to the gateway. A static
    listener is bound to a wildcard address: the engine reports each connection's local address (the
    exit IP the client dialed) with its events."""

    _tags = itertools.count(1)

    def __init__(self, engine: TunnelEngine, sock: socket.socket, static: bool, ip: str, kind: int) -> None:
        self.engine = engine
        self.sockets = [sock]
        self.static = static
        self.ip = ip
        self.kind = kind
        self.tag = next(self._tags)  # never reused: a connection accepted on a closed listener finds none

    def close(self) -> None:
        sock = self.sockets[0]
        if sock.fileno() >= 0:
            self.engine.engine.remove_listener(sock.fileno())
            if self.engine.fast is not None:  # its connections' cached decisions name its tag
                self.engine.fast.forget()
            self.engine.listeners.pop(self.tag, None)
            sock.close()

    async def wait_closed(self) -> None:
        return None


class TunnelEngine:
    """The engine plus the decisions; ``adopt(kind, static)`` builds the Python protocol for a handed
    over connection (HttpProxyConnection or Socks5Connection)."""

    def __init__(self, ctx: Context, adopt: Callable[[int, bool], asyncio.Protocol]) -> None:
        assert _tunnels is not None
        self.ctx = ctx
        self.adopt_protocol = adopt
        self.engine = _tunnels.Engine(max_head=MAX_HEAD, buffer_size=RELAY_READ,
                                      timeout_reply=build_reply(408, "request head timeout"))
        self.listeners: dict[int, Listener] = {}
        self.conns: dict[int, Tunnel] = {}
        self.connect_cache: dict[bytes, ConnectRequest] = {}
        self.loop: asyncio.AbstractEventLoop | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        from . import tunnel_socks as socks

        t = self.t = _tunnels
        self.fast: FastPath | None = None  # the decision cache (fastpath.py), from start()
        self.handlers: dict[int, Callable[..., None]] = {
            t.HANDOFF: self.on_handoff, t.CONNECT: functools.partial(tunnel_connect.on_connect, self),
            t.SOCKS_NOAUTH: functools.partial(socks.on_noauth, self),
            t.SOCKS_AUTH: functools.partial(socks.on_auth, self),
            t.SOCKS_REQUEST: functools.partial(socks.on_request, self),
            t.CONNECT_FAILED: functools.partial(tunnel_connect.on_connect_failed, self),
            t.CLOSED: self.on_closed,
        }
        if engine_module.has(t, "cache"):  # an engine built before the decision cache (fast.c) has none
            self.handlers[t.FAST_FAILED] = functools.partial(tunnel_connect.on_fast_failed, self)
            self.handlers[t.FAST_SOCKS_REQUEST] = functools.partial(socks.on_fast_request, self)
        self.no_answer = frozenset({t.HANDOFF, t.CLOSED})  # events that leave no connection waiting

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        loop.add_reader(self.engine.fileno(), self.on_ready)
        self.ctx.meter.add_source(self.pull_counts)
        if self.ctx.settings.splice_after > 0 and engine_module.has(self.t, "splice"):
            self.engine.set_splice(self.ctx.settings.splice_after)
        if self.ctx.settings.tunnel_cache and hasattr(self.ctx.access, "on_change") and \
                engine_module.has(self.t, "cache"):
            self.fast = FastPath(self)
            self.engine.fast_enable(CONNECT_ESTABLISHED)

    def listen(self, host: str, port: int, kind: str, static: bool, backlog: int) -> Listener:
        v6 = ":" in host
        sock = socket.socket(socket.AF_INET6 if v6 else socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            # workers share the ports; the most specific bound address wins (decisions: listeners)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
            if v6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # inherited by accepted sockets
            if self.ctx.settings.defer_accept > 0:  # both protocols' clients speak first
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_DEFER_ACCEPT, self.ctx.settings.defer_accept)
            sock.bind((host, port))
            sock.listen(backlog)
            sock.setblocking(False)
        except OSError:
            sock.close()
            raise
        assert _tunnels is not None
        code = _tunnels.KIND_SOCKS if kind == "socks" else _tunnels.KIND_HTTP
        listener = Listener(self, sock, static, host, code)
        self.listeners[listener.tag] = listener
        self.engine.add_listener(sock.fileno(), code, listener.tag,
                                 code == _tunnels.KIND_HTTP and self.ctx.settings.sniff_socks_on_http, static)
        return listener

    # -- the event loop side --
    def on_ready(self) -> None:
        events = self.engine.run()
        while events:
            self.dispatch(events)
            events = self.engine.take()

    def drain(self) -> None:
        """Events queued by calls made outside ``on_ready`` (sweep, a connect after DNS)."""
        events = self.engine.take()
        while events:
            self.dispatch(events)
            events = self.engine.take()

    def dispatch(self, events: list[tuple[Any, ...]]) -> None:
        handlers = self.handlers
        for event in events:
            try:
                handlers[event[0]](*event[1:])
            except ListenerClosed:
                self.reply_close(event[1], b"")
            except Exception:  # one connection's bug must not stop the others, nor leave it hanging
                log.exception("tunnel event %r failed", event[:2])
                if event[0] not in self.no_answer:
                    self.reply_close(event[1], b"")

    def sweep(self) -> None:
        """Handshake, connect and idle timeouts (the gateway's sweeper calls this every second)."""
        settings = self.ctx.settings
        self.engine.sweep(settings.handshake_timeout, settings.connect_timeout, settings.idle_timeout)
        self.drain()
        if self.fast is not None:
            self.fast.sweep()

    def cut(self, cid: int) -> None:
        """End a tunnel now (its CLOSED event meters the last bytes and frees the slot)."""
        if self.engine.close(cid):
            self.drain()

    def pull_counts(self) -> None:
        """Byte totals of the open tunnels into their flows (before the meter harvests)."""
        conns = self.conns
        for cid, up, down in self.engine.counts():
            rec = conns.get(cid)
            if rec is not None and rec.flow is not None:
                rec.flow.up = up
                rec.flow.down = down

    def stats(self) -> dict[str, int]:
        return dict(self.engine.stats())

    def unused_slots(self) -> int:
        """Budget slots charged for the decision cache's tunnels that none holds now."""
        return self.fast.unused_slots() if self.fast is not None else 0

    def close(self) -> None:
        if self.loop is not None:
            self.loop.remove_reader(self.engine.fileno())
        for listener in list(self.listeners.values()):
            listener.close()
        events = self.engine.close_all()
        if events:
            self.dispatch(events)
        if self.fast is not None:
            self.fast.harvest()
            self.fast.stop()
        for task in list(self._tasks):
            task.cancel()

    # -- replies --
    def reply_close(self, cid: int, data: bytes) -> None:
        assert _tunnels is not None
        self.engine.send(cid, data, _tunnels.NEXT_CLOSE)

    def reply_then_request(self, cid: int, data: bytes) -> None:
        """SOCKS5: answer the greeting or the credentials; the engine then reads the request."""
        assert _tunnels is not None
        self.engine.send(cid, data, _tunnels.NEXT_REQUEST)

    def static_ip(self, tag: int, local_ip: str | None) -> str | None:
        """The exit IP of a connection on a static listener (the local address the client dialed, as
        the engine reported it), None for the rotating gateway; ListenerClosed when the connection's
        listener was closed meanwhile."""
        listener = self.listeners.get(tag)
        if listener is None:
            raise ListenerClosed(tag)
        return local_ip if listener.static else None

    # -- handed over to the Python protocols --
    def on_handoff(self, tag: int, fd: int, data: bytes, kind: int) -> None:
        listener = self.listeners.get(tag)
        sock = socket.socket(fileno=fd)
        if listener is None:
            sock.close()
            return
        assert _tunnels is not None
        protocol = self.adopt_protocol(kind, listener.static)
        self._spawn(self._adopt(sock, protocol, data, None))

    async def _adopt(self, sock: socket.socket, protocol: asyncio.Protocol, data: bytes,
                     then: Callable[[], None] | None) -> None:
        made = protocol.connection_made

        def connection_made(transport: asyncio.BaseTransport) -> None:
            made(transport)
            if data:
                protocol.data_received(data)
            if then is not None:
                then()

        protocol.connection_made = connection_made  # type: ignore[method-assign]
        assert self.loop is not None
        try:
            await self.loop.connect_accepted_socket(lambda: protocol, sock)
        except OSError:
            sock.close()

    def _spawn(self, coro: Any) -> asyncio.Task[Any]:
        assert self.loop is not None
        task = self.loop.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    # -- HTTP CONNECT and the upstream side (tunnel_connect.py) --
    def parse_connect(self, head: bytes) -> ConnectRequest:
        return tunnel_connect.parse_connect(self, head)

    def open(self, cid: int, rec: Tunnel, ok_reply: bytes | None) -> None:
        tunnel_connect.open_upstream(self, cid, rec, ok_reply)

    def upstream_failed(self, cid: int, rec: Tunnel, error: UpstreamError) -> None:
        tunnel_connect.upstream_failed(self, cid, rec, error)

    def on_closed(self, cid: int, up: int, down: int, why: int, kind: int, auth_id: int = 0) -> None:
        rec = self.conns.pop(cid, None)
        if rec is None and auth_id and self.fast is not None:  # credentials the engine accepted (cache)
            known = self.fast.record(auth_id)
            rec = Tunnel(known.grant, known.static_ip, True) if known is not None else None
        t = _tunnels
        assert t is not None
        if why == t.WHY_HANDSHAKE_TIMEOUT:
            self.ctx.error(None, "", "handshake_timeout" if kind == t.KIND_SOCKS else "head_timeout")
        elif why == t.WHY_PROTOCOL:
            self.ctx.error(rec.grant.service.service_id if rec is not None else None, "", "protocol")
        if rec is None:
            return
        if rec.task is not None:
            rec.task.cancel()
        flow = rec.flow
        if flow is not None:
            flow.up, flow.down, flow.cut = up, down, None
            self.ctx.meter.close_flow(flow)
        if rec.slot is not None:
            release_slot(self.ctx, rec.slot)
