"""Plain HTTP requests on an HTTP proxy connection (http_conn.py): absolute-form requests relayed over
pooled keep-alive upstream connections, with auth, limits and the exit IP chosen on every request, a
speed limit's bucket on both directions, and a retry on a pooled connection the origin had closed."""

from __future__ import annotations

import asyncio

from .http_tunnel import HttpTunnelling
from .http_upstream import _BUFFER_FULL, _CONNECTING, _SPEED, _UPSTREAM_FULL, HttpUpstream
from .protocol.errors import ProtocolError
from .protocol.http_proxy import ConnectRequest, EndOfRequest, Event, ForwardRequest
from .protocol.http_response import ResponseFramer
from .routing import RoutingError
from .speed import throttle_http
from .subnets import one_off
from .upstream import UpstreamError, literal_family, open_connection
from .upstream_pools import dial


class HttpForwarding(HttpTunnelling):
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
