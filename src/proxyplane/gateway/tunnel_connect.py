"""HTTP CONNECT decisions and the upstream side for the tunnel engine (``tunnels.py``): the CONNECT head's
credentials, slot and exit IP with the same calls, replies and error categories as
``HttpProxyConnection``; then the upstream connect (a DNS name resolved here first, the destination
policy checked) and its failures, for CONNECT and SOCKS5 alike. Each ``on_*`` function answers one
engine event."""

from __future__ import annotations

import asyncio
import functools
import os
from typing import TYPE_CHECKING

from .admission import http_credentials, slot_refusal, take_slot
from .destinations import BlockedDestination
from .protocol.errors import ProtocolError
from .protocol.http_proxy import ConnectRequest, HttpRequestParser
from .protocol.http_response import CONNECT_ESTABLISHED, build_reply
from .routing import RoutingError
from .tunnel_records import Tunnel, socks_reply
from .upstream import UpstreamError, literal_family, resolve, timeout_error, upstream_error

if TYPE_CHECKING:
    from .tunnels import TunnelEngine

CACHE_SIZE = 4096  # parsed CONNECT heads kept (the same head from a rotating customer: parsed once)


def parse_connect(engine: TunnelEngine, head: bytes) -> ConnectRequest:
    cache = engine.connect_cache
    req = cache.get(head)
    if req is None:
        events = HttpRequestParser().feed(head + b"\r\n\r\n")
        if len(events) != 1 or not isinstance(events[0], ConnectRequest):
            raise ProtocolError("malformed CONNECT request")
        req = events[0]
        if len(cache) >= CACHE_SIZE:
            cache.clear()
        cache[head] = req
    return req


def on_connect(engine: TunnelEngine, cid: int, tag: int, head: bytes, client_ip: str,
               local_ip: str | None) -> None:
    ctx = engine.ctx
    try:
        req = parse_connect(engine, head)
    except ProtocolError as exc:
        ctx.error(None, "", "protocol")
        engine.reply_close(cid, build_reply(exc.status, str(exc)))
        return
    host = req.host
    static_ip = engine.static_ip(tag, local_ip)
    grant = http_credentials(ctx, static_ip, client_ip, req.auth, host)
    if isinstance(grant, bytes):  # the refusal
        engine.reply_close(cid, grant)
        return
    service = grant.service
    sid = service.service_id
    refused = take_slot(ctx, service)
    if refused is not None:
        ctx.error(sid, host, refused)
        engine.reply_close(cid, slot_refusal(ctx, refused, sid))
        return
    rec = engine.conns[cid] = Tunnel(grant, static_ip, False)
    rec.slot, rec.host, rec.port = sid, host, req.port
    # the CONNECT counts as a request once the tunnel opens (see upstream_failed)
    rec.flow = ctx.meter.open_flow(sid, host, requests=1, connections=1)
    if service.upstream_pool is not None:  # through a supplier: relayed in Python (chain_handoff.py)
        from .chain_handoff import hand_over

        hand_over(engine, cid, rec, CONNECT_ESTABLISHED)
        return
    try:
        exit_ip = ctx.router.choose(grant, static_ip, literal_family(host))
    except RoutingError as exc:
        rec.flow.requests = 0
        ctx.error(sid, host, exc.reason)
        engine.reply_close(cid, build_reply(exc.status, str(exc)))
        return
    rec.exit_ip = exit_ip
    if service.speed_bps or (service.parent is not None and service.parent.speed_bps):
        from .speed_handoff import hand_over as relay_in_python  # its bucket (issue 32.6)

        relay_in_python(engine, cid, rec, CONNECT_ESTABLISHED)
        return
    open_upstream(engine, cid, rec, CONNECT_ESTABLISHED)


def open_upstream(engine: TunnelEngine, cid: int, rec: Tunnel, ok_reply: bytes | None) -> None:
    host, port = rec.host, rec.port
    if rec.flow is not None:
        rec.flow.cut = functools.partial(engine.cut, cid)
    if literal_family(host) is None:
        rec.task = engine._spawn(resolve_and_open(engine, cid, rec, ok_reply))
        return
    if not engine.ctx.destinations.permits(host, port):  # the engine dials this literal (inet_pton)
        upstream_failed(engine, cid, rec, upstream_error(BlockedDestination(host), host, port))
        return
    if engine.fast is not None:  # the next connection with these bytes: the engine opens it alone
        engine.fast.fill_open(cid, rec)
    engine.engine.connect(cid, host, port, rec.exit_ip, ok_reply)


async def resolve_and_open(engine: TunnelEngine, cid: int, rec: Tunnel, ok_reply: bytes | None) -> None:
    host, port = rec.host, rec.port
    assert engine.loop is not None
    try:
        async with asyncio.timeout(engine.ctx.settings.connect_timeout):
            address = await resolve(engine.loop, rec.exit_ip, host, port, engine.ctx.destinations)
    except TimeoutError:
        upstream_failed(engine, cid, rec, timeout_error(host, port))
        engine.drain()
        return
    except OSError as exc:
        upstream_failed(engine, cid, rec, upstream_error(exc, host, port))
        engine.drain()
        return
    if cid in engine.conns:
        rec.task = None
        engine.engine.connect(cid, address, port, rec.exit_ip, ok_reply)
        engine.drain()  # a connect that failed at once queued its event


def on_connect_failed(engine: TunnelEngine, cid: int, err: int, timed_out: bool) -> None:
    rec = engine.conns.get(cid)
    if rec is None:
        return
    if timed_out:
        error = timeout_error(rec.host, rec.port)
    else:
        error = upstream_error(OSError(err, os.strerror(err)), rec.host, rec.port)
    upstream_failed(engine, cid, rec, error)


def on_fast_failed(engine: TunnelEngine, cid: int, entry_id: int, exit_ip: str, err: int,
                   timed_out: bool) -> None:
    """A tunnel the decision cache opened could not connect: Python's from here (fastpath.take_back)."""
    if engine.fast is None or not engine.fast.take_back(cid, entry_id, exit_ip):
        engine.reply_close(cid, b"")
        return
    on_connect_failed(engine, cid, err, timed_out)


def upstream_failed(engine: TunnelEngine, cid: int, rec: Tunnel, error: UpstreamError) -> None:
    sid = rec.grant.service.service_id  # rec.slot: None for a tunnel the decision cache opened
    engine.ctx.error(sid, rec.host, error.reason, rec.exit_ip)
    if rec.socks:
        engine.reply_close(cid, socks_reply(error.rep))
        return
    if rec.flow is not None:
        rec.flow.requests = 0  # a CONNECT that never opened counts its connection, not a request
    engine.reply_close(cid, build_reply(error.status, str(error)))
