"""HTTP proxy client connections: absolute-form requests relayed over pooled keep-alive upstream
connections (auth, limit and exit-IP choice on every request; http_forward.py), and CONNECT tunnels
(http_tunnel.py); the connection's state, timeouts and endings are in http_state.py, the upstream side in
http_upstream.py. This module: the client transport's callbacks."""

from __future__ import annotations

import asyncio
from typing import cast

from .http_forward import HttpForwarding
from .http_upstream import _BUFFER_FULL
from .protocol.errors import ProtocolError

__all__ = ["HttpProxyConnection"]


class HttpProxyConnection(HttpForwarding):
    """The client connection: its transport callbacks (the parts: http_state.py,
    http_forward.py, http_tunnel.py, the upstream side http_upstream.py)."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)
        if self.static:
            self.static_ip = self.listen_ip
        self.loop = loop = asyncio.get_running_loop()
        self.last_active = loop.time()
        self.deadline = self.ctx.deadlines.add(self, self.ctx.settings.handshake_timeout)

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
