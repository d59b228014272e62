"""Bidirectional byte relay between two asyncio transports (CONNECT and SOCKS5 tunnels).

Each side gets a ``RelayEnd`` protocol; bytes read on one side are written to the other. Backpressure:
when a side's write buffer passes its high-water mark, reading on the other side pauses until it drains.
Half-close: an EOF from one side becomes ``write_eof()`` on the other (or a close when that transport
cannot half-close, e.g. TLS); both EOFs close both. Idle timeout: a tunnel that moved no byte either way
during a whole ``idle_timeout`` window is closed at a sweep of ``ctx.deadlines`` (no timer per tunnel).
Bytes are counted into a metering ``Flow`` (client→upstream = up); when the relay ends the flow is
closed and the service's connection slot released.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, cast

from .metering import Flow
from .speed import throttle

if TYPE_CHECKING:
    from .context import Context


class RelayEnd(asyncio.Protocol):
    """One side of a relay. It may be created before the relay starts (an upstream connection being
    opened); bytes and EOF arriving before then are held and passed on at ``Relay.start``."""

    __slots__ = ("transport", "peer", "relay", "pending", "eof", "lost", "is_client", "held", "backpressured")

    def __init__(self, is_client: bool = False) -> None:
        self.transport: asyncio.Transport | None = None
        self.peer: asyncio.Transport | None = None  # the other side's transport once linked
        self.relay: Relay | None = None
        self.pending: list[bytes] | None = None
        self.eof = False
        self.lost = False
        self.is_client = is_client
        self.held = False  # reading paused by the service's speed limit (speed.py)
        self.backpressured = False  # reading paused because the other side's write buffer is full

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        peer = self.peer
        if peer is None:
            if self.relay is None:  # not linked yet: hold
                if self.pending is None:
                    self.pending = [data]
                else:
                    self.pending.append(data)
            return
        peer.write(data)
        flow = self.relay.flow  # type: ignore[union-attr]  # set together with peer
        if self.is_client:
            flow.up += len(data)
        else:
            flow.down += len(data)
        bucket = self.relay.bucket  # type: ignore[union-attr]
        if bucket is not None:  # a speed-limited service (issue 32.6)
            delay = bucket.take(len(data))
            if delay > 0 and self.transport is not None:
                throttle(self.transport, delay, self)

    def eof_received(self) -> bool | None:
        self.eof = True
        relay = self.relay
        if relay is not None:
            relay.side_eof(self)
        transport = self.transport
        return transport is not None and transport.can_write_eof()

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        if self.relay is not None:
            self.relay.close()

    def pause_writing(self) -> None:
        if self.peer is not None:
            self.peer.pause_reading()
            relay = self.relay
            if relay is not None:
                (relay.client_end if self is relay.upstream_end else relay.upstream_end).backpressured = True

    def resume_writing(self) -> None:
        relay = self.relay
        if self.peer is not None and relay is not None:
            other = relay.client_end if self is relay.upstream_end else relay.upstream_end
            other.backpressured = False
            if not other.eof and not other.held:
                self.peer.resume_reading()


class Relay:
    __slots__ = (
        "ctx", "flow", "client_end", "upstream_end", "slot", "closed", "_last_total", "_deadline", "bucket"
    )

    def __init__(self, ctx: Context, client: asyncio.Transport, upstream: RelayEnd, flow: Flow,
                 slot: str | None) -> None:
        """``slot``: the service whose concurrent-connection slot this tunnel holds (released at close)."""
        self.ctx = ctx
        self.flow = flow
        self.slot = slot
        self.client_end = end = RelayEnd(is_client=True)
        self.upstream_end = upstream
        self.closed = False
        self._last_total = 0
        self._deadline = 0
        self.bucket = ctx.speed.for_entry(ctx.access.get(flow.service_id))  # speed.py (issue 32.6)
        client.set_protocol(end)
        end.transport = client

    def start(self, client_bytes: bytes = b"") -> None:
        """Link both ends; ``client_bytes`` (read before the relay existed) go upstream first."""
        client, upstream = self.client_end, self.upstream_end
        client.relay = upstream.relay = self
        ct, ut = client.transport, upstream.transport
        if upstream.lost or ut is None or ct is None:
            self.close()
            return
        client.peer, upstream.peer = ut, ct
        if client_bytes:
            client.data_received(client_bytes)
        for end in (client, upstream):
            if end.pending is not None:
                pending, end.pending = end.pending, None
                for data in pending:
                    end.data_received(data)
        if upstream.eof:
            self.side_eof(upstream)
        if not self.closed:
            if not client.held:
                ct.resume_reading()
            flow = self.flow
            flow.cut = self.close
            self._last_total = flow.up + flow.down
            self._deadline = self.ctx.deadlines.add(self, self.ctx.settings.idle_timeout)

    def side_eof(self, end: RelayEnd) -> None:
        other = self.client_end if end is self.upstream_end else self.upstream_end
        if other.eof:
            self.close()
            return
        peer = end.peer
        if peer is None:
            return
        if peer.can_write_eof():
            peer.write_eof()
        else:
            self.close()

    def expire(self) -> None:
        """Idle check at a deadline sweep: close when no byte moved since the last check."""
        if self.closed:
            return
        flow = self.flow
        total = flow.up + flow.down
        if total == self._last_total:
            self.close()
            return
        self._last_total = total
        self._deadline = self.ctx.deadlines.add(self, self.ctx.settings.idle_timeout)

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        ctx = self.ctx
        if self._deadline:
            ctx.deadlines.remove(self, self._deadline)
        client, upstream = self.client_end, self.upstream_end
        for end in (client, upstream):
            if end.transport is not None:
                end.transport.close()
            end.relay = None  # break the reference cycles: plain refcounting frees the tunnel
            end.peer = None
        self.flow.cut = None
        ctx.meter.close_flow(self.flow)
        if self.slot is not None:
            ctx.limiter.release(self.slot)
            ctx.capacity.release(self.slot)  # its descriptors in the node's budget (capacity.py)
            self.slot = None
