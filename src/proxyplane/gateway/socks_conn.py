"""SOCKS5 client connections: negotiation, CONNECT tunnels and UDP ASSOCIATE relays."""

from __future__ import annotations

import asyncio
import socket
from typing import Any, cast

from .access import AuthError, Grant, authenticate
from .admission import SocksRefusal, release_slot, socks_admit
from .context import Context
from .metering import Flow
from .protocol import socks5
from .protocol.errors import ProtocolError
from .protocol.udp import build_udp_datagram, parse_udp_datagram
from .relay import Relay, RelayEnd
from .routing import RoutingError
from .upstream import Connector, UpstreamError, literal_family
from .upstream_pools import ChainConnector


class Socks5Connection(asyncio.Protocol):
    def __init__(self, ctx: Context, static: bool) -> None:
        self.ctx = ctx
        self.static = static
        self.transport: asyncio.Transport | None = None
        self.parser = socks5.Socks5Parser()
        self.static_ip: str | None = None
        self.grant: Grant | None = None
        self.slot: str | None = None
        self.closed = False
        self.handed_over = False
        self.task: asyncio.Task[None] | None = None
        self.udp: UdpAssociation | None = None
        self.connector: Connector | ChainConnector | None = None
        self.deadline = 0  # the handshake timeout's Deadlines bucket while negotiating
        self.host = ""
        self.exit_ip = ""

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
        self.deadline = self.ctx.deadlines.add(self, self.ctx.settings.handshake_timeout)

    def expire(self) -> None:
        """The handshake timeout (a ``Deadlines`` sweep): no complete request in time."""
        self.deadline = 0
        if not self.closed:
            self.ctx.error(None, "", "handshake_timeout")
            self.close()

    def end_handshake(self) -> None:
        if self.deadline:
            self.ctx.deadlines.remove(self, self.deadline)
            self.deadline = 0

    def data_received(self, data: bytes) -> None:
        if self.parser.done:
            return  # bytes on the control connection of a UDP association (or after a failure)
        while True:  # a client may send its whole handshake at once: parse on after each answer
            try:
                events = self.parser.feed(data)
            except ProtocolError as exc:
                self.ctx.error(self.grant.service.service_id if self.grant else None, "", "protocol")
                self.send(self.parser.error_reply(exc))
                self.close()
                return
            if not events:
                return
            for event in events:
                if isinstance(event, socks5.MethodsOffered):
                    self.on_methods(event.methods)
                elif isinstance(event, socks5.UserPass):
                    self.on_userpass(event.login, event.password)
                else:
                    self.on_request(event)
                if self.closed or self.parser.done:
                    return
            data = b""

    def send(self, data: bytes) -> None:
        if self.transport is not None and data:
            self.transport.write(data)

    def on_methods(self, methods: frozenset[int]) -> None:
        if socks5.USERPASS in methods:
            self.send(self.parser.choose_method(socks5.USERPASS))
            return
        if socks5.NO_AUTH in methods:
            try:
                self.grant = authenticate(self.ctx.access, self.static_ip, self.client_ip, None, None)
            except AuthError as exc:
                self.ctx.error(exc.service_id, "", exc.reason)
            else:
                self.send(self.parser.choose_method(socks5.NO_AUTH))
                return
        self.send(self.parser.choose_method(socks5.NO_ACCEPTABLE))
        self.close()

    def on_userpass(self, login: str, password: str) -> None:
        try:
            self.grant = self.ctx.auth_throttle.authenticate(
                self.ctx.access, self.static_ip, self.client_ip, login, password)
        except (AuthError, ProtocolError) as exc:  # ProtocolError: a malformed username option
            if isinstance(exc, AuthError):
                self.ctx.error(exc.service_id, "", exc.reason)
            else:
                self.ctx.error(None, "", "username")
            self.send(self.parser.auth_result(False))
            self.close()
            return
        self.send(self.parser.auth_result(True))

    def refuse(self, rep: int, reason: str, service_id: str | None, host: str, exit_ip: str = "") -> None:
        self.ctx.error(service_id, host, reason, exit_ip)
        self.send(self.parser.reply(rep))
        self.close()

    def on_request(self, req: socks5.SocksRequest) -> None:
        self.end_handshake()
        grant = self.grant
        assert grant is not None
        sid = grant.service.service_id
        try:
            exit_ip = socks_admit(self.ctx, grant, self.static_ip, req.command, req.host)
        except SocksRefusal as refusal:
            self.refuse(refusal.rep, refusal.reason, refusal.service_id, refusal.host)
            return
        self.slot = sid
        assert self.transport is not None
        if req.command == socks5.CMD_UDP_ASSOCIATE:
            self.ctx.meter.record(sid, "", connections=1)
            self.task = asyncio.get_running_loop().create_task(self.start_udp(sid, exit_ip))
            return
        # the connection and request are counted with the tunnel's flow (or with the failure)
        self.host, self.exit_ip = req.host, exit_ip
        if grant.service.upstream_pool is not None:  # through a supplier (upstream_pools.py)
            try:
                plan = self.ctx.upstreams.plan(grant, req.host, req.port, self.ctx.destinations)
            except (RoutingError, UpstreamError) as exc:
                self.ctx.meter.record(sid, self.host, connections=1, requests=1)
                rep = exc.rep if isinstance(exc, UpstreamError) else socks5.REP_NETWORK_UNREACHABLE
                self.refuse(rep, exc.reason, sid, req.host)
                return
            self.transport.pause_reading()
            self.connector = ChainConnector(self.ctx, self, RelayEnd, plan, req.host, req.port)
            return
        self.transport.pause_reading()
        self.connector = Connector(self.ctx, self, RelayEnd, exit_ip, req.host, req.port)

    def connected(self, transport: asyncio.Transport, end: RelayEnd) -> None:
        """The tunnel's upstream connection is open (``Connector`` callback)."""
        self.connector = None
        client = self.transport
        if self.closed or client is None or client.is_closing():
            transport.close()
            return
        ctx = self.ctx
        self.send(self.parser.reply(socks5.REP_SUCCEEDED, *bound_address(transport)))
        flow = ctx.meter.open_flow(self.slot or "", self.host, requests=1, connections=1)
        slot, self.slot = self.slot, None
        self.handed_over = True
        Relay(ctx, client, end, flow, slot).start(self.parser.take_rest())

    def connect_failed(self, error: UpstreamError) -> None:
        self.connector = None
        sid = self.slot or ""
        self.ctx.meter.record(sid, self.host, connections=1, requests=1)
        self.refuse(error.rep, error.reason, sid, self.host, self.exit_ip)

    async def start_udp(self, sid: str, exit_ip: str) -> None:
        loop = asyncio.get_running_loop()
        assoc = UdpAssociation(self, sid, exit_ip)
        try:
            await assoc.open(loop)
        except OSError:
            self.task = None
            assoc.close()
            self.refuse(socks5.REP_GENERAL_FAILURE, "udp_bind", sid, "")
            return
        self.task = None
        if self.closed:
            assoc.close()
            return
        self.udp = assoc
        self.send(self.parser.reply(socks5.REP_SUCCEEDED, self.listen_ip, assoc.client_port))

    def connection_lost(self, exc: Exception | None) -> None:
        if self.handed_over:
            return
        self.closed = True
        self.end_handshake()
        if self.connector is not None:
            self.connector.cancel()
            self.connector = None
            # counted here since the tunnel never opened
            self.ctx.meter.record(self.slot or "", self.host, connections=1, requests=1)
        if self.task is not None and not self.task.done():
            self.task.cancel()
        if self.udp is not None:
            self.udp.close()
            self.udp = None
        if self.slot is not None:
            release_slot(self.ctx, self.slot)
            self.slot = None

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()


def bound_address(transport: asyncio.BaseTransport) -> tuple[str, int]:
    """The upstream socket's local address (BND.ADDR/BND.PORT of the SOCKS5 reply)."""
    name = transport.get_extra_info("sockname")
    return str(name[0]), int(name[1])


class _Datagrams(asyncio.DatagramProtocol):
    def __init__(self, on_datagram: object) -> None:
        self.on_datagram = on_datagram

    def datagram_received(self, data: bytes, addr: tuple[str | object, ...]) -> None:
        self.on_datagram(data, addr)  # type: ignore[operator]


class UdpAssociation:
    """UDP relay of one SOCKS5 UDP ASSOCIATE: the client sends SOCKS5-wrapped datagrams to a socket on
    the listen IP; they leave unwrapped from a socket bound to the exit IP; answers come back wrapped.
    Only the TCP client's IP may use it; it ends with the TCP control connection."""

    def __init__(self, conn: Socks5Connection, service_id: str, exit_ip: str) -> None:
        self.conn = conn
        self.ctx = conn.ctx
        self.service_id = service_id
        self.exit_ip = exit_ip
        self.client_ip = conn.client_ip
        self.client_side: asyncio.DatagramTransport | None = None
        self.exit_side: asyncio.DatagramTransport | None = None
        self.client_addr: tuple[str, int] | None = None
        self.client_port = 0
        self.flows: dict[str, Flow] = {}
        self.names: dict[tuple[str, int], str] = {}  # resolved address -> name the client used

    async def open(self, loop: asyncio.AbstractEventLoop) -> None:
        self.client_side, _ = await loop.create_datagram_endpoint(
            lambda: _Datagrams(self.from_client), local_addr=(self.conn.listen_ip, 0))
        self.exit_side, _ = await loop.create_datagram_endpoint(
            lambda: _Datagrams(self.from_destination), local_addr=(self.exit_ip, 0))
        self.client_port = self.client_side.get_extra_info("sockname")[1]

    def flow(self, host: str) -> Flow:
        flow = self.flows.get(host)
        if flow is None:
            flow = self.flows[host] = self.ctx.meter.open_flow(self.service_id, host)
        return flow

    def from_client(self, data: bytes, addr: tuple[Any, ...]) -> None:
        if addr[0] != self.client_ip or self.exit_side is None:
            return
        if self.client_addr is None:
            self.client_addr = (addr[0], addr[1])
        elif (addr[0], addr[1]) != self.client_addr:
            return
        try:
            dgram = parse_udp_datagram(data)
        except ProtocolError:
            self.ctx.error(self.service_id, "", "udp_protocol")
            return
        if dgram.frag != 0:  # fragmentation is not supported: drop (RFC 1928 allows it)
            self.ctx.error(self.service_id, dgram.host, "udp_fragment")
            return
        family = literal_family(dgram.host)
        exit_family = socket.AF_INET6 if ":" in self.exit_ip else socket.AF_INET
        if family is None:
            asyncio.ensure_future(self.send_resolved(dgram.host, dgram.port, dgram.payload, exit_family))
            return
        if family != exit_family:
            self.ctx.error(self.service_id, dgram.host, "address_family")
            return
        if not self.ctx.destinations.permits(dgram.host, dgram.port):
            self.ctx.error(self.service_id, dgram.host, "blocked")
            return
        self.send(dgram.host, (dgram.host, dgram.port), dgram.payload)

    async def send_resolved(self, host: str, port: int, payload: bytes, family: int) -> None:
        loop = asyncio.get_running_loop()
        try:
            infos = await loop.getaddrinfo(host, port, family=family, type=socket.SOCK_DGRAM)
        except OSError:
            self.ctx.error(self.service_id, host, "dns")
            return
        if infos and self.exit_side is not None:
            addr = (str(infos[0][4][0]), port)
            if not self.ctx.destinations.permits(addr[0], port):
                self.ctx.error(self.service_id, host, "blocked")
                return
            self.names[addr] = host
            self.send(host, addr, payload)

    def send(self, host: str, addr: tuple[str, int], payload: bytes) -> None:
        assert self.exit_side is not None
        self.exit_side.sendto(payload, addr)
        flow = self.flow(host)
        flow.up += len(payload)

    def from_destination(self, data: bytes, addr: tuple[Any, ...]) -> None:
        if self.client_addr is None or self.client_side is None:
            return
        ip, port = str(addr[0]), int(addr[1])
        host = self.names.get((ip, port), ip)
        self.client_side.sendto(build_udp_datagram(ip, port, data), self.client_addr)
        self.flow(host).down += len(data)

    def close(self) -> None:
        for side in (self.client_side, self.exit_side):
            if side is not None:
                side.close()
        self.client_side = self.exit_side = None
        for flow in self.flows.values():
            self.ctx.meter.close_flow(flow)
        self.flows = {}
