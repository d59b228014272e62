"""Tunnels of the C engine (``tunnels.py``) whose service draws from an upstream pool (issue 36.4): the
engine authenticated the client, took its slot and opened its flow; the connection is then detached from
the engine and relayed in Python through the supplier (the engine dials addresses, not proxies). The reply
and the metering are those of the engine's own tunnels: the CONNECT counts as a request once the tunnel
opens, a failure counts the connection and an error of its category."""

from __future__ import annotations

import asyncio
import socket
from typing import TYPE_CHECKING, cast

from .admission import release_slot
from .protocol.http_response import build_reply
from .relay import Relay, RelayEnd
from .routing import RoutingError
from .upstream import UpstreamError
from .upstream_pools import ChainConnector, Plan

if TYPE_CHECKING:
    from .context import Context
    from .metering import Flow
    from .tunnel_records import Tunnel
    from .tunnels import TunnelEngine


def socks_reply(rep: int) -> bytes:
    return bytes((5, rep, 0, 1, 0, 0, 0, 0, 0, 0))


class ChainedClient(asyncio.Protocol):
    """The client's side while its supplier tunnel opens; the relay's once it is open."""

    def __init__(self, ctx: Context, plan: Plan, rec: Tunnel, ok_reply: bytes) -> None:
        self.ctx, self.plan, self.rec, self.ok_reply = ctx, plan, rec, ok_reply
        self.transport: asyncio.Transport | None = None
        self.rest = bytearray()
        self.connector: ChainConnector | None = None
        self.done = False  # handed to the relay, or ended (flow closed, slot released)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)
        self.transport.pause_reading()
        rec = self.rec
        self.connector = ChainConnector(self.ctx, self, RelayEnd, self.plan, rec.host, rec.port)

    def data_received(self, data: bytes) -> None:
        self.rest += data

    def connection_lost(self, exc: Exception | None) -> None:
        if self.connector is not None:
            self.connector.cancel()
            self.connector = None
        self.end()

    def end(self) -> None:
        if self.done:
            return
        self.done = True
        rec = self.rec
        if rec.flow is not None:
            self.ctx.meter.close_flow(rec.flow)
        if rec.slot is not None:
            release_slot(self.ctx, rec.slot)

    def connected(self, transport: asyncio.Transport, end: RelayEnd) -> None:
        self.connector = None
        client = self.transport
        if self.done or client is None or client.is_closing():
            transport.close()
            return
        self.done = True
        client.write(self.ok_reply)
        flow = cast("Flow", self.rec.flow)
        Relay(self.ctx, client, end, flow, self.rec.slot).start(bytes(self.rest))

    def connect_failed(self, error: UpstreamError) -> None:
        self.connector = None
        rec = self.rec
        self.ctx.error(rec.slot, rec.host, error.reason)
        if rec.flow is not None and not rec.socks:
            rec.flow.requests = 0  # a CONNECT that never opened counts its connection, not a request
        if self.transport is not None:
            reply = socks_reply(error.rep) if rec.socks else build_reply(error.status, str(error))
            self.transport.write(reply)
            self.transport.close()
        self.end()


def hand_over(engine: TunnelEngine, cid: int, rec: Tunnel, ok_reply: bytes) -> None:
    """Serve engine connection ``cid`` through its service's upstream pool (refused as the engine's
    routing failures are when the pool has no supplier or the destination is refused)."""
    ctx = engine.ctx
    try:
        plan = ctx.upstreams.plan(rec.grant, rec.host, rec.port, ctx.destinations)
    except RoutingError as exc:
        if rec.flow is not None and not rec.socks:
            rec.flow.requests = 0
        ctx.error(rec.slot, rec.host, exc.reason)
        engine.reply_close(cid, socks_reply(3) if rec.socks else build_reply(exc.status, str(exc)))
        return
    except UpstreamError as exc:
        engine.upstream_failed(cid, rec, exc)
        return
    engine.conns.pop(cid, None)
    detached = engine.engine.detach(cid)
    client = ChainedClient(ctx, plan, rec, ok_reply)
    if detached is None:  # gone meanwhile
        client.end()
        return
    fd, rest = detached
    engine._spawn(engine._adopt(socket.socket(fileno=fd), client, rest, None))
