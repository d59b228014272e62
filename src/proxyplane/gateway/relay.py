"""Bidirectional byte relay between two asyncio transports.

Each side gets a ``RelayEnd`` protocol; bytes read on one side are written to the other. Backpressure:
when a side's write buffer passes its high-water mark, reading on the other side pauses until it drains.
Half-close: an EOF from one side becomes ``write_eof()`` on the other (or a close when that transport
cannot half-close, e.g. TLS); both EOFs close both. Idle timeout: no byte either way for ``idle_timeout``
seconds closes both. Bytes are counted into a metering ``Flow`` (client→upstream = up).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import cast

from .metering import Flow


class RelayEnd(asyncio.Protocol):
    """One side of a relay. It may be created before the relay starts (an upstream connection being
    opened); bytes and EOF arriving before then are held and passed on at ``Relay.start``."""

    __slots__ = ("transport", "peer", "relay", "pending", "eof", "lost", "is_client")

    def __init__(self, is_client: bool = False) -> None:
        self.transport: asyncio.Transport | None = None
        self.peer: RelayEnd | None = None
        self.relay: Relay | None = None
        self.pending: list[bytes] = []
        self.eof = False
        self.lost = False
        self.is_client = is_client

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        peer = self.peer
        if peer is None:
            self.pending.append(data)
            return
        assert peer.transport is not None and self.relay is not None
        peer.transport.write(data)
        flow = self.relay.flow
        if self.is_client:
            flow.up += len(data)
        else:
            flow.down += len(data)

    def eof_received(self) -> bool | None:
        self.eof = True
        if self.relay is not None:
            self.relay.side_eof(self)
        return self._can_half_close()

    def _can_half_close(self) -> bool:
        return self.transport is not None and self.transport.can_write_eof()

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        if self.relay is not None:
            self.relay.close()

    def pause_writing(self) -> None:
        if self.peer is not None and self.peer.transport is not None:
            self.peer.transport.pause_reading()

    def resume_writing(self) -> None:
        if self.peer is not None and self.peer.transport is not None and not self.peer.eof:
            self.peer.transport.resume_reading()


class Relay:
    def __init__(self, client: asyncio.Transport, upstream: RelayEnd, flow: Flow, *,
                 idle_timeout: float = 300.0, on_close: Callable[[Relay], None] | None = None) -> None:
        self.flow = flow
        self.client_end = RelayEnd(is_client=True)
        self.upstream_end = upstream
        self.idle_timeout = idle_timeout
        self.closed = False
        self._on_close = on_close
        self._last_total = -1
        self._timer: asyncio.TimerHandle | None = None
        client.set_protocol(self.client_end)
        self.client_end.connection_made(client)

    def start(self, client_bytes: bytes = b"") -> None:
        """Link both ends; ``client_bytes`` (read before the relay existed) go upstream first."""
        client, upstream = self.client_end, self.upstream_end
        client.peer, upstream.peer = upstream, client
        client.relay = upstream.relay = self
        if upstream.lost or upstream.transport is None or client.transport is None:
            self.close()
            return
        if client_bytes:
            client.pending.insert(0, client_bytes)
        for end in (client, upstream):
            pending, end.pending = end.pending, []
            for data in pending:
                end.data_received(data)
        if upstream.eof:
            self.side_eof(upstream)
        if not self.closed:
            client.transport.resume_reading()
            loop = asyncio.get_running_loop()
            self._timer = loop.call_later(self.idle_timeout, self._check_idle)

    def side_eof(self, end: RelayEnd) -> None:
        peer = end.peer
        if peer is None or peer.transport is None:
            return
        if peer.eof:
            self.close()
        elif peer.transport.can_write_eof():
            peer.transport.write_eof()
        else:
            self.close()

    def _check_idle(self) -> None:
        total = self.flow.up + self.flow.down
        if total == self._last_total:
            self.close()
            return
        self._last_total = total
        self._timer = asyncio.get_running_loop().call_later(self.idle_timeout, self._check_idle)

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        if self._timer is not None:
            self._timer.cancel()
        for end in (self.client_end, self.upstream_end):
            if end.transport is not None:
                end.transport.close()
        if self._on_close is not None:
            self._on_close(self)
