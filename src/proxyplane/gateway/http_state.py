"""An HTTP proxy client connection's state (http_conn.py), with what every part of it uses: its
timeouts, the authorization of a request head (credentials, connection slot), read pausing and the endings.

Timeouts (one ``Deadlines`` entry per connection, checked at the sweeps, nothing on the per-request path
but the ``last_active`` stamp): a request head must be complete within ``handshake_timeout`` of the
connection opening or of its first byte (slowloris); an authenticated keep-alive connection may wait
``idle_timeout`` for its next request; a request in flight is ended when no byte moved either way for a
whole ``idle_timeout``. Tunnels hand over to the relay's own idle timeout."""

from __future__ import annotations

import asyncio

from .access import Grant
from .admission import http_credentials, release_slot, slot_refusal, take_slot
from .context import Context
from .http_upstream import HttpUpstream
from .protocol.http_proxy import Credentials, ForwardRequest, HttpRequestParser
from .protocol.http_response import ResponseFramer, build_reply
from .speed import Both, Bucket
from .upstream import Connector
from .upstream_pools import ChainConnector, Plan, UpstreamEntry


class HttpConnectionState(asyncio.Protocol):
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

    @property
    def listen_ip(self) -> str:
        assert self.transport is not None
        return str(self.transport.get_extra_info("sockname")[0])

    @property
    def client_ip(self) -> str:  # only looked up when needed (whitelist auth, UDP): a syscall each
        assert self.transport is not None
        return str(self.transport.get_extra_info("peername")[0])

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
