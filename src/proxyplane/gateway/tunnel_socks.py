"""SOCKS5 decisions for the tunnel engine (``tunnels.py``): the whitelist answer to a no-auth greeting,
RFC 1929 credentials and the request, with the same calls, replies and error categories as
``Socks5Connection``. Each function answers one engine event."""

from __future__ import annotations

import socket
from typing import TYPE_CHECKING

from .access import AuthError, authenticate
from .admission import SocksRefusal, socks_admit
from .protocol import socks5
from .protocol.errors import ProtocolError
from .tunnel_records import Tunnel, socks_reply

if TYPE_CHECKING:
    from .tunnels import TunnelEngine


def on_noauth(engine: TunnelEngine, cid: int, tag: int, client_ip: str, local_ip: str | None) -> None:
    static_ip = engine.static_ip(tag, local_ip)
    try:
        grant = authenticate(engine.ctx.access, static_ip, client_ip, None, None)
    except AuthError as exc:
        engine.ctx.error(exc.service_id, "", exc.reason)
        engine.reply_close(cid, bytes((socks5.VERSION, socks5.NO_ACCEPTABLE)))
        return
    engine.conns[cid] = Tunnel(grant, static_ip, True)
    if engine.fast is not None:  # the next greeting from this address: the engine answers it alone
        engine.fast.fill_auth(cid, grant, static_ip)
    engine.reply_then_request(cid, bytes((socks5.VERSION, socks5.NO_AUTH)))


def on_auth(engine: TunnelEngine, cid: int, tag: int, login_bytes: bytes, password_bytes: bytes,
            client_ip: str, local_ip: str | None) -> None:
    ctx = engine.ctx
    static_ip = engine.static_ip(tag, local_ip)
    try:
        login, password = login_bytes.decode(), password_bytes.decode()
    except UnicodeDecodeError:
        ctx.error(None, "", "protocol")
        engine.reply_close(cid, b"\x01\x01")
        return
    try:
        grant = ctx.auth_throttle.authenticate(ctx.access, static_ip, client_ip, login, password)
    except (AuthError, ProtocolError) as exc:  # ProtocolError: a malformed username option
        if isinstance(exc, AuthError):
            ctx.error(exc.service_id, "", exc.reason)
        else:
            ctx.error(None, "", "username")
        engine.reply_close(cid, b"\x01\x01")
        return
    engine.conns[cid] = Tunnel(grant, static_ip, True)
    if engine.fast is not None:  # the same credentials from this address: the engine accepts them alone
        engine.fast.fill_auth(cid, grant, static_ip)
    engine.reply_then_request(cid, b"\x01\x00")


def refuse(engine: TunnelEngine, cid: int, rep: int, reason: str, service_id: str | None, host: str) -> None:
    engine.ctx.error(service_id, host, reason)
    engine.reply_close(cid, socks_reply(rep))


def on_request(engine: TunnelEngine, cid: int, command: int, atyp: int, host: str | bytes, port: int) -> None:
    rec = engine.conns.get(cid)
    if rec is None:
        return
    ctx = engine.ctx
    grant = rec.grant
    sid = grant.service.service_id
    if isinstance(host, bytes):
        try:
            host = socks5.domain_name(host)
        except ProtocolError:
            refuse(engine, cid, socks5.REP_HOST_UNREACHABLE, "protocol", sid, "")
            return
    if command == socks5.CMD_UDP_ASSOCIATE:
        hand_over_udp(engine, cid, rec, socks5.SocksRequest(command, host, port, atyp))
        return
    try:
        exit_ip = socks_admit(ctx, grant, rec.static_ip, command, host)
    except SocksRefusal as refusal:
        refuse(engine, cid, refusal.rep, refusal.reason, refusal.service_id, refusal.host)
        return
    rec.slot, rec.host, rec.port, rec.exit_ip = sid, host, port, exit_ip
    rec.flow = ctx.meter.open_flow(sid, host, requests=1, connections=1)
    if grant.service.upstream_pool is not None:  # through a supplier: relayed in Python (chain_handoff.py)
        from .chain_handoff import hand_over

        hand_over(engine, cid, rec, socks_reply(socks5.REP_SUCCEEDED))
        return
    service = grant.service
    if service.speed_bps or (service.parent is not None and service.parent.speed_bps):
        from .speed_handoff import hand_over as relay_in_python  # its bucket (issue 32.6)

        relay_in_python(engine, cid, rec, socks_reply(socks5.REP_SUCCEEDED))
        return
    engine.open(cid, rec, None)


def on_fast_request(engine: TunnelEngine, cid: int, auth_id: int, command: int, atyp: int, host: str | bytes,
                    port: int) -> None:
    """A request after credentials (or a whitelist greeting) the engine accepted by a cached decision:
    decided here from that decision's grant, as if Python had accepted them on this connection."""
    known = engine.fast.record(auth_id) if engine.fast is not None else None
    if known is None:
        engine.reply_close(cid, socks_reply(socks5.REP_GENERAL_FAILURE))
        return
    engine.conns[cid] = Tunnel(known.grant, known.static_ip, True)
    on_request(engine, cid, command, atyp, host, port)


def hand_over_udp(engine: TunnelEngine, cid: int, rec: Tunnel, req: socks5.SocksRequest) -> None:
    """UDP ASSOCIATE is served by ``Socks5Connection`` (it owns the control connection from here)."""
    from .socks_conn import Socks5Connection

    engine.conns.pop(cid, None)
    detached = engine.engine.detach(cid)
    if detached is None:
        return
    fd, _rest = detached
    conn = Socks5Connection(engine.ctx, rec.static_ip is not None)
    conn.grant = rec.grant
    conn.parser = socks5.Socks5Parser.awaiting_reply()
    engine._spawn(engine._adopt(socket.socket(fileno=fd), conn, b"", lambda: conn.on_request(req)))

