"""HTTP proxy client connections: absolute-form requests relayed over pooled keep-alive upstream
connections (auth, limit and exit-IP choice on every request), and CONNECT tunnels.

Timeouts (one ``Deadlines`` entry per connection, checked at the sweeps, nothing on the per-request path
but the ``last_active`` stamp): a request head must be complete within ``handshake_timeout`` of the
connection opening or of its first byte (slowloris); an authenticated keep-alive connection may wait
``idle_timeout`` for its next request; a request in flight is ended when no byte moved either way for a
whole ``idle_timeout``. Tunnels hand over to the relay's own idle timeout."""

from __future__ import annotations

import asyncio
from typing import cast

from .access import Grant
from .admission import http_credentials, release_slot, slot_refusal, take_slot
from .context import Context
from .protocol.errors import ProtocolError
from .protocol.http_proxy import (
    ConnectRequest,
    Credentials,
    EndOfRequest,
    Event,
    ForwardRequest,
    HttpRequestParser,
)
from .protocol.http_response import CONNECT_ESTABLISHED, ResponseFramer, build_reply
from .relay import Relay, RelayEnd
from .routing import RoutingError
from .speed import Both, Bucket, throttle_http
from .subnets import one_off
from .upstream import Connector, UpstreamError, literal_family, open_connection
from .upstream_pools import ChainConnector, Plan, UpstreamEntry, dial

_CONNECTING = 1  # reasons the client transport's reading is paused (bit mask)
_BUFFER_FULL = 2
_UPSTREAM_FULL = 4
_SPEED = 8  # a request body past the service's speed limit (speed.py)


class HttpUpstream(asyncio.Protocol):
    def __init__(self, key: tuple[str, str, int]) -> None:
        self.key = key
        self.transport: asyncio.Transport | None = None
        self.client: HttpProxyConnection | None = None
        self.idle_since = 0.0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        client = self.client
        if client is None:  # unsolicited bytes on an idle connection: not reusable
            if self.transport is not None:
                self.transport.close()
            return
        client.response_data(data)

    def eof_received(self) -> bool:
        if self.client is not None:
            self.client.upstream_gone(self)
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        if self.client is not None:
            self.client.upstream_gone(self)
        self.transport = None

    def pause_writing(self) -> None:
        if self.client is not None:
            self.client.pause(_UPSTREAM_FULL)

    def resume_writing(self) -> None:
        if self.client is not None:
            self.client.resume(_UPSTREAM_FULL)


class HttpProxyConnection(asyncio.Protocol):
    def __init__(self, ctx: Context, static: bool, tls: bool = False) -> None:
        self.ctx = ctx
        self.static = static
        self.tls = tls
        self.transport: asyncio.Transport | None = None
        self.loop: asyncio.AbstractEventLoop | None = None  # looked up once (get_running_loop is a syscall)
        self.static_ip: str | None = None
        self.parser = HttpRequestParser()
        self.service_id: str | None = None  # the service whose connection slot this connection holds
        self.req: ForwardRequest | None = None
        self.req_service = ""
        self.exit_ip = ""
        self.framer: ResponseFramer | None = None
        self.upstream: HttpUpstream | None = None
        self.pending: list[bytes] = []
        self.request_complete = False
        self.up_bytes = 0
        self.down_bytes = 0
        self.sent_any = False
        self.reused = False
        self.one_off = False
        self.retried = False
        self.closed = False
        self.tunneling = False
        self.first = True
        self.paused = 0
        self.write_paused = False
        self.last_active = 0.0
        self.head_started = 0.0  # when the first byte of a still incomplete request head arrived
        self.deadline = 0  # the Deadlines bucket of this connection's head/idle timeout
        self.checked_req: ForwardRequest | None = None  # the request in flight at the last sweep ...
        self.checked_bytes = -1  # ... and its byte count then
        self.task: asyncio.Task[None] | None = None  # opening an upstream for a forwarded request
        self.connector: Connector | ChainConnector | None = None  # opening a CONNECT tunnel's upstream
        self.plan: Plan | None = None  # the request goes through an upstream supplier (upstream_pools.py)
        self.via: UpstreamEntry | None = None  # the supplier the request in flight went through
        self.tunnel_host = ""
        self.bucket: Bucket | Both | None = None  # the request's service's speed limit (speed.py, issue 32.6)
        self.speed_held = False  # the upstream's reading paused by it

    # -- client transport callbacks --
    @property
    def listen_ip(self) -> str:
        assert self.transport is not None
        return str(self.transport.get_extra_info("sockname")[0])

    @property
    def client_ip(self) -> str:  # only looked up when needed (whitelist auth, UDP): a syscall each
        assert self.transport is not None
        return str(self.transport.get_extra_info("peername")[0])

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)
        if self.static:
            self.static_ip = self.listen_ip
        self.loop = loop = asyncio.get_running_loop()
        self.last_active = loop.time()
        self.deadline = self.ctx.deadlines.add(self, self.ctx.settings.handshake_timeout)

    def expire(self) -> None:
        """The head / keep-alive idle / request idle timeout (a ``Deadlines`` sweep)."""
        self.deadline = 0
        if self.closed or self.tunneling:
            return
        ctx, settings = self.ctx, self.ctx.settings
        req = self.req
        if req is not None:  # in flight: end it when no byte moved either way since the last sweep
            moved = self.up_bytes + self.down_bytes
            if req is self.checked_req and moved == self.checked_bytes:
                self.fail(504, "request idle timeout", "idle_timeout", self.req_service, req.host)
                return
            self.checked_req, self.checked_bytes = req, moved
            self.deadline = ctx.deadlines.add(self, settings.idle_timeout)
            return
        now = asyncio.get_running_loop().time()
        # waiting for a request head: unauthenticated connections get handshake_timeout, authenticated
        # keep-alive ones idle_timeout; a head once begun must complete within handshake_timeout
        limit = settings.handshake_timeout if self.service_id is None else settings.idle_timeout
        left = limit - (now - self.last_active)
        if self.head_started:
            left = min(left, settings.handshake_timeout - (now - self.head_started))
        if left > 0:
            self.deadline = ctx.deadlines.add(self, left)
            return
        if self.head_started or self.service_id is None:
            ctx.error(self.service_id, "", "head_timeout")
            if self.parser.buffered:
                self.reply_and_close(build_reply(408, "request head timeout"))
                return
        self.close()  # an idle keep-alive connection: closed quietly

    def end_deadline(self) -> None:
        if self.deadline:
            self.ctx.deadlines.remove(self, self.deadline)
            self.deadline = 0

    def data_received(self, data: bytes) -> None:
        if self.first:
            self.first = False
            if data[:1] == b"\x05" and not self.tls and self.ctx.settings.sniff_socks_on_http:
                from .socks_conn import Socks5Connection

                assert self.transport is not None
                self.end_deadline()
                socks = Socks5Connection(self.ctx, self.static)
                self.transport.set_protocol(socks)
                self.closed = True
                socks.connection_made(self.transport)
                socks.data_received(data)
                return
        try:
            events = self.parser.feed(data)
        except ProtocolError as exc:
            self.fail(exc.status, str(exc), "protocol")
            return
        if events:
            self.handle(events)
        elif self.parser.buffered > self.parser.max_head:
            self.pause(_BUFFER_FULL)
        elif self.req is None and not self.head_started:  # a partial head: its time limit starts
            self.head_started = asyncio.get_running_loop().time()

    def eof_received(self) -> bool:
        # A client half-close before its request is answered: finish the response, then close.
        return self.req is not None

    def connection_lost(self, exc: Exception | None) -> None:
        if self.tunneling and self.connector is None:
            return  # the relay owns the transport now
        self.closed = True
        self.end_deadline()
        if self.connector is not None:
            self.connector.cancel()
            self.connector = None
        if self.task is not None and not self.task.done():
            self.task.cancel()
        up = self.upstream
        if up is not None:
            up.client = None
            if up.transport is not None:
                up.transport.close()
            self.upstream = None
        if self.req is not None:
            self.ctx.meter.record(self.req_service, self.req.host, requests=1, bytes_up=self.up_bytes,
                                  bytes_down=self.down_bytes, error="client_closed")
            self.req = None
        self.release_slot()

    def pause_writing(self) -> None:
        self.write_paused = True
        if self.upstream is not None and self.upstream.transport is not None:
            self.upstream.transport.pause_reading()

    def resume_writing(self) -> None:
        self.write_paused = False
        if self.upstream is not None and self.upstream.transport is not None and not self.speed_held:
            self.upstream.transport.resume_reading()

    def pause(self, reason: int) -> None:
        if not self.paused and self.transport is not None:
            self.transport.pause_reading()
        self.paused |= reason

    def resume(self, reason: int) -> None:
        was = self.paused
        self.paused &= ~reason
        if was and not self.paused and self.transport is not None and not self.closed:
            self.transport.resume_reading()

    def release_slot(self) -> None:
        if self.service_id is not None:
            release_slot(self.ctx, self.service_id)
            self.service_id = None

    # -- requests --
    def handle(self, events: list[Event]) -> None:
        for event in events:
            if type(event) is ForwardRequest:
                if not self.start_request(event):
                    return
            elif type(event) is EndOfRequest:
                self.request_complete = True
            elif type(event) is ConnectRequest:
                self.start_connect(event)
                return
            else:
                self.up_bytes += len(event.data)
                if self.bucket is not None:  # a request body of a speed-limited service
                    delay = self.bucket.take(len(event.data))
                    if delay > 0 and self.loop is not None:
                        self.pause(_SPEED)
                        self.loop.call_later(delay, self.resume, _SPEED)
                up = self.upstream
                if up is not None and up.transport is not None:
                    up.transport.write(event.data)
                else:
                    self.pending.append(event.data)

    def authorize(self, auth: Credentials | None, host: str) -> Grant | None:
        ctx = self.ctx
        grant = http_credentials(ctx, self.static_ip, self.client_ip, auth, host)
        if isinstance(grant, bytes):  # the refusal
            self.reply_and_close(grant)
            return None
        service = grant.service
        if service.service_id != self.service_id:
            self.release_slot()
            refused = take_slot(ctx, service)
            if refused is not None:
                ctx.error(service.service_id, host, refused)
                self.reply_and_close(slot_refusal(ctx, refused, service.service_id))
                return None
            self.service_id = service.service_id
            ctx.meter.record(service.service_id, host, connections=1)
        return grant

    def start_request(self, req: ForwardRequest) -> bool:
        grant = self.authorize(req.auth, req.host)
        if grant is None:
            return False
        service_id = grant.service.service_id
        self.plan = None
        try:
            if grant.service.upstream_pool is not None:  # through a supplier: a tunnel per request
                self.plan = self.ctx.upstreams.plan(grant, req.host, req.port, self.ctx.destinations)
                exit_ip = ""
            else:
                exit_ip = self.ctx.router.choose(grant, self.static_ip, literal_family(req.host))
        except (RoutingError, UpstreamError) as exc:
            self.fail(exc.status, str(exc), exc.reason, service_id, req.host)
            return False
        self.req, self.req_service, self.exit_ip = req, service_id, exit_ip
        service, self.bucket = grant.service, None
        if service.speed_bps or (service.parent is not None and service.parent.speed_bps):
            self.bucket = self.ctx.speed.for_entry(service)  # the response's bytes take from its bucket
        # an address drawn for this request only, or a supplier's rotation: its upstream is not pooled
        self.one_off = self.plan is not None or one_off(grant)
        self.up_bytes, self.down_bytes = len(req.head), 0
        self.request_complete = self.sent_any = self.retried = False
        self.framer = ResponseFramer(req.method)
        key = (exit_ip, req.host, req.port)
        up = self.ctx.pool.get(key) if self.plan is None else None
        if up is not None:
            transport = up.transport
            assert type(up) is HttpUpstream and transport is not None
            self.reused = True
            self.upstream = up  # attach(up), inlined
            up.client = self
            if not self.write_paused:
                transport.resume_reading()
            transport.write(req.head)
        else:
            self.reused = False
            self.pending = [req.head]
            self.pause(_CONNECTING)
            self.task = asyncio.get_running_loop().create_task(self.connect(key))
        return True

    async def connect(self, key: tuple[str, str, int]) -> None:
        ctx = self.ctx
        try:
            if self.plan is not None:
                factory = lambda: HttpUpstream(key)  # noqa: E731
                transport, up, self.via = await dial(ctx, self.plan, key[1], key[2], factory)
            else:
                transport, up = await open_connection(lambda: HttpUpstream(key), key[0], key[1], key[2],
                                                      ctx.settings.connect_timeout, ctx.destinations)
        except UpstreamError as exc:
            self.fail(exc.status, str(exc), exc.reason, self.req_service, key[1], key[0])
            return
        finally:
            self.task = None
        if self.closed or self.req is None:
            transport.close()
            return
        self.attach(up)
        for data in self.pending:
            transport.write(data)
        self.pending = []
        self.resume(_CONNECTING)

    def attach(self, up: HttpUpstream) -> None:
        self.upstream = up
        up.client = self
        if not self.write_paused and not self.speed_held and up.transport is not None:
            up.transport.resume_reading()

    def response_data(self, data: bytes) -> None:
        framer = self.framer
        assert framer is not None and self.transport is not None
        try:
            out = framer.feed(data)
        except ProtocolError as exc:
            host = self.req.host if self.req is not None else ""
            self.fail(exc.status, str(exc), "upstream_protocol", self.req_service, host)
            return
        if out:
            self.sent_any = True
            self.down_bytes += len(out)
            self.transport.write(out)
            if self.bucket is not None and self.upstream is not None and self.upstream.transport is not None:
                delay = self.bucket.take(len(out))
                if delay > 0:
                    throttle_http(self, self.upstream.transport, delay)
        if framer.done:
            self.response_done(framer.reusable and not framer.extra and self.request_complete)

    def response_done(self, reusable: bool) -> None:
        up, req = self.upstream, self.req
        assert up is not None and req is not None
        self.upstream = self.framer = self.req = None
        self.sent_any = False
        up.client = None
        self.ctx.meter.record(self.req_service, req.host, requests=1, bytes_up=self.up_bytes,
                              bytes_down=self.down_bytes)
        if self.via is not None:  # the supplier's share of the bytes (the margin report's cost)
            self.ctx.upstreams.count(self.via.upstream_id, self.up_bytes, self.down_bytes)
            self.via = None
        if reusable and up.transport is not None and not self.one_off:
            up.transport.resume_reading()
            self.ctx.pool.put(up)
        elif up.transport is not None:
            up.transport.close()
        if not req.keep_alive or not self.request_complete or self.closed:
            self.close()
            return
        if self.paused:
            self.resume(_UPSTREAM_FULL)
        assert self.loop is not None
        self.last_active = self.loop.time()
        self.head_started = 0.0
        try:
            events = self.parser.resume()
        except ProtocolError as exc:
            self.fail(exc.status, str(exc), "protocol")
            return
        if self.paused:
            self.resume(_BUFFER_FULL)
        if events:
            self.handle(events)

    def upstream_gone(self, up: HttpUpstream) -> None:
        """EOF or loss of the upstream connection while it serves this client."""
        if up is not self.upstream:
            return
        framer, req = self.framer, self.req
        assert framer is not None and req is not None
        if framer.eof():  # a close-delimited body ends here
            self.response_done(False)
            self.close()
            return
        self.upstream = None
        up.client = None
        if up.transport is not None:
            up.transport.close()
        if not framer.started and self.reused and not req.has_body and not self.retried:
            # a pooled connection the origin had closed: try once more on a fresh one
            self.retried = self.reused = True
            self.pending = [req.head]
            self.pause(_CONNECTING)
            key = (self.exit_ip, req.host, req.port)
            self.task = asyncio.get_running_loop().create_task(self.connect(key))
            return
        self.fail(502, "upstream closed the connection", "upstream_closed", self.req_service, req.host)

    # -- CONNECT --
    def start_connect(self, req: ConnectRequest) -> None:
        grant = self.authorize(req.auth, req.host)
        if grant is None:
            return
        service_id = grant.service.service_id
        plan = None
        try:
            if grant.service.upstream_pool is not None:  # through a supplier (upstream_pools.py)
                plan = self.ctx.upstreams.plan(grant, req.host, req.port, self.ctx.destinations)
                exit_ip = ""
            else:
                exit_ip = self.ctx.router.choose(grant, self.static_ip, literal_family(req.host))
        except (RoutingError, UpstreamError) as exc:
            self.fail(exc.status, str(exc), exc.reason, service_id, req.host)
            return
        self.tunneling = True
        self.req_service, self.tunnel_host, self.exit_ip = service_id, req.host, exit_ip
        self.pause(_CONNECTING)
        if plan is not None:
            self.connector = ChainConnector(self.ctx, self, RelayEnd, plan, req.host, req.port)
            return
        self.connector = Connector(self.ctx, self, RelayEnd, exit_ip, req.host, req.port)

    def connected(self, transport: asyncio.Transport, end: RelayEnd) -> None:
        """The tunnel's upstream connection is open (``Connector`` callback)."""
        self.connector = None
        client = self.transport
        if self.closed or client is None or client.is_closing():
            transport.close()
            return
        client.write(CONNECT_ESTABLISHED)
        ctx = self.ctx
        flow = ctx.meter.open_flow(self.req_service, self.tunnel_host, requests=1)
        slot, self.service_id = self.service_id, None  # the relay releases the slot when it ends
        self.closed = True
        self.end_deadline()  # the relay's idle timeout takes over
        Relay(ctx, client, end, flow, slot).start(self.parser.take_rest())

    def connect_failed(self, error: UpstreamError) -> None:
        self.connector = None
        self.tunneling = False
        self.fail(error.status, str(error), error.reason, self.req_service, self.tunnel_host, self.exit_ip)

    # -- endings --
    def reply_and_close(self, reply: bytes) -> None:
        if self.transport is not None and not self.sent_any:
            self.transport.write(reply)
        self.close()

    def fail(self, status: int, message: str, reason: str, service_id: str | None = None,
             host: str = "", exit_ip: str = "") -> None:
        self.ctx.error(service_id, host, reason, exit_ip)
        if self.req is not None and service_id is not None:
            self.ctx.meter.record(service_id, self.req.host, requests=1, bytes_up=self.up_bytes,
                                  bytes_down=self.down_bytes)
            self.req = None
        self.reply_and_close(build_reply(status, message))

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()


