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
import os
import socket
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .access import Grant
from .admission import http_credentials, release_slot, slot_refusal, take_slot
from .destinations import BlockedDestination
from .fastpath import FastPath
from .protocol import socks5
from .protocol.errors import ProtocolError
from .protocol.http_proxy import MAX_HEAD, ConnectRequest, HttpRequestParser
from .protocol.http_response import CONNECT_ESTABLISHED, build_reply
from .routing import RoutingError
from .upstream import UpstreamError, literal_family, resolve, timeout_error, upstream_error

if TYPE_CHECKING:
    from .context import Context
    from .metering import Flow

try:
    from . import _tunnels  # type: ignore[attr-defined]
except ImportError:  # not built (not Linux, or no compiler): the pure-Python path serves everything
    _tunnels = None

log = logging.getLogger(__name__)

_CACHE_SIZE = 4096
# bytes read per relay recv (one shared buffer; only what a peer cannot take at once is queued per
# tunnel): 256 KiB measured 15-20 % less CPU per MB than 64 KiB (bench/README.md), like uvloop's reads
RELAY_READ = 256 * 1024


def available() -> bool:
    """Whether the C tunnel engine was built for this platform."""
    return _tunnels is not None


def socks_reply(rep: int) -> bytes:
    return bytes((socks5.VERSION, rep, 0, socks5.ATYP_IPV4, 0, 0, 0, 0, 0, 0))


class ListenerClosed(Exception):
    """The listener a connection was accepted on is closed: the connection is closed too."""


class Tunnel:
    """What Python holds for one engine connection once it authenticated."""

    __slots__ = ("grant", "static_ip", "socks", "slot", "flow", "host", "port", "exit_ip", "task")

    def __init__(self, grant: Grant, static_ip: str | None, socks: bool) -> None:
        self.grant = grant
        self.static_ip = static_ip
        self.socks = socks
        self.slot: str | None = None  # the service whose connection slot this tunnel holds
        self.flow: Flow | None = None
        self.host = ""
        self.port = 0
        self.exit_ip = ""
        self.task: asyncio.Task[None] | None = None  # resolving a DNS name


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
            t.HANDOFF: self.on_handoff, t.CONNECT: self.on_connect,
            t.SOCKS_NOAUTH: functools.partial(socks.on_noauth, self),
            t.SOCKS_AUTH: functools.partial(socks.on_auth, self),
            t.SOCKS_REQUEST: functools.partial(socks.on_request, self),
            t.CONNECT_FAILED: self.on_connect_failed, t.CLOSED: self.on_closed,
        }
        if hasattr(t, "FAST_FAILED"):  # an engine built before the decision cache (fast.c) has none
            self.handlers[t.FAST_FAILED] = self.on_fast_failed
            self.handlers[t.FAST_SOCKS_REQUEST] = functools.partial(socks.on_fast_request, self)
        self.no_answer = frozenset({t.HANDOFF, t.CLOSED})  # events that leave no connection waiting

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        loop.add_reader(self.engine.fileno(), self.on_ready)
        self.ctx.meter.add_source(self.pull_counts)
        if self.ctx.settings.tunnel_cache and hasattr(self.ctx.access, "on_change") and \
                hasattr(self.engine, "fast_enable"):
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

    def on_fast_failed(self, cid: int, entry_id: int, exit_ip: str, err: int, timed_out: bool) -> None:
        if self.fast is None or not self.fast.take_back(cid, entry_id, exit_ip):
            self.reply_close(cid, b"")
            return
        self.on_connect_failed(cid, err, timed_out)

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

    # -- HTTP CONNECT --
    def parse_connect(self, head: bytes) -> ConnectRequest:
        req = self.connect_cache.get(head)
        if req is None:
            events = HttpRequestParser().feed(head + b"\r\n\r\n")
            if len(events) != 1 or not isinstance(events[0], ConnectRequest):
                raise ProtocolError("malformed CONNECT request")
            req = events[0]
            if len(self.connect_cache) >= _CACHE_SIZE:
                self.connect_cache.clear()
            self.connect_cache[head] = req
        return req

    def on_connect(self, cid: int, tag: int, head: bytes, client_ip: str, local_ip: str | None) -> None:
        ctx = self.ctx
        try:
            req = self.parse_connect(head)
        except ProtocolError as exc:
            ctx.error(None, "", "protocol")
            self.reply_close(cid, build_reply(exc.status, str(exc)))
            return
        host = req.host
        static_ip = self.static_ip(tag, local_ip)
        grant = http_credentials(ctx, static_ip, client_ip, req.auth, host)
        if isinstance(grant, bytes):  # the refusal
            self.reply_close(cid, grant)
            return
        service = grant.service
        sid = service.service_id
        refused = take_slot(ctx, service)
        if refused is not None:
            ctx.error(sid, host, refused)
            self.reply_close(cid, slot_refusal(ctx, refused, sid))
            return
        rec = self.conns[cid] = Tunnel(grant, static_ip, False)
        rec.slot, rec.host, rec.port = sid, host, req.port
        # the CONNECT counts as a request once the tunnel opens (see upstream_failed)
        rec.flow = ctx.meter.open_flow(sid, host, requests=1, connections=1)
        if service.upstream_pool is not None:  # through a supplier: relayed in Python (chain_handoff.py)
            from .chain_handoff import hand_over

            hand_over(self, cid, rec, CONNECT_ESTABLISHED)
            return
        try:
            exit_ip = ctx.router.choose(grant, static_ip, literal_family(host))
        except RoutingError as exc:
            rec.flow.requests = 0
            ctx.error(sid, host, exc.reason)
            self.reply_close(cid, build_reply(exc.status, str(exc)))
            return
        rec.exit_ip = exit_ip
        if service.speed_bps or (service.parent is not None and service.parent.speed_bps):
            from .speed_handoff import hand_over as relay_in_python  # its bucket (issue 32.6)

            relay_in_python(self, cid, rec, CONNECT_ESTABLISHED)
            return
        self.open(cid, rec, CONNECT_ESTABLISHED)

    # -- upstream --
    def open(self, cid: int, rec: Tunnel, ok_reply: bytes | None) -> None:
        host, port = rec.host, rec.port
        if rec.flow is not None:
            rec.flow.cut = functools.partial(self.cut, cid)
        if literal_family(host) is None:
            rec.task = self._spawn(self.resolve_and_open(cid, rec, ok_reply))
            return
        if not self.ctx.destinations.permits(host, port):  # the engine dials this literal (inet_pton)
            self.upstream_failed(cid, rec, upstream_error(BlockedDestination(host), host, port))
            return
        if self.fast is not None:  # the next connection with these bytes: the engine opens it alone
            self.fast.fill_open(cid, rec)
        self.engine.connect(cid, host, port, rec.exit_ip, ok_reply)

    async def resolve_and_open(self, cid: int, rec: Tunnel, ok_reply: bytes | None) -> None:
        host, port = rec.host, rec.port
        assert self.loop is not None
        try:
            async with asyncio.timeout(self.ctx.settings.connect_timeout):
                address = await resolve(self.loop, rec.exit_ip, host, port, self.ctx.destinations)
        except TimeoutError:
            self.upstream_failed(cid, rec, timeout_error(host, port))
            self.drain()
            return
        except OSError as exc:
            self.upstream_failed(cid, rec, upstream_error(exc, host, port))
            self.drain()
            return
        if cid in self.conns:
            rec.task = None
            self.engine.connect(cid, address, port, rec.exit_ip, ok_reply)
            self.drain()  # a connect that failed at once queued its event

    def on_connect_failed(self, cid: int, err: int, timed_out: bool) -> None:
        rec = self.conns.get(cid)
        if rec is None:
            return
        if timed_out:
            error = timeout_error(rec.host, rec.port)
        else:
            error = upstream_error(OSError(err, os.strerror(err)), rec.host, rec.port)
        self.upstream_failed(cid, rec, error)

    def upstream_failed(self, cid: int, rec: Tunnel, error: UpstreamError) -> None:
        sid = rec.grant.service.service_id  # rec.slot: None for a tunnel the decision cache opened
        self.ctx.error(sid, rec.host, error.reason, rec.exit_ip)
        if rec.socks:
            self.reply_close(cid, socks_reply(error.rep))
            return
        if rec.flow is not None:
            rec.flow.requests = 0  # a CONNECT that never opened counts its connection, not a request
        self.reply_close(cid, build_reply(error.status, str(error)))

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
