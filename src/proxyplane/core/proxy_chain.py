"""Chaining through an upstream proxy supplier (issue 36.4): the username template and the handshake.

A supplier is an HTTP proxy (we send ``CONNECT host:port`` with Basic credentials) or a SOCKS5 proxy (RFC
1928 CONNECT, RFC 1929 username/password). Whatever the customer spoke to us (CONNECT, a plain HTTP
request, SOCKS5), the gateway opens a tunnel to the destination through the supplier and relays over it.

The username template maps our targeting and session onto the supplier's syntax, e.g.
``{user}[-country-{country}][-session-{session}]``: ``{field}`` is replaced by its value, a ``[...]`` group
is dropped whole when a field inside it has no value for this connection. ``user`` (the supplier account's
username) is always set; every other field rides in the customer's username (or the product's session) and
must sit inside a group. A template naming an unknown field, or a field outside a group, is refused.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import ipaddress
import re
import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

# the fields a template may name; region/city/asn are filled once the username parser gives them
TEMPLATE_FIELDS = ("user", "country", "region", "city", "asn", "session", "ttl")
_TOKEN = re.compile(r"\{([^{}\[\]]*)\}|\[|\]|[^{}\[\]]+|.", re.S)
_LITERAL = re.compile(r"[A-Za-z0-9_.:=+@%~-]*")
MAX_HEAD = 8192  # bytes of a supplier's CONNECT reply head

P = TypeVar("P", bound=asyncio.BaseProtocol)


class TemplateError(ValueError):
    """The template is malformed or names an unknown field (``field``)."""

    def __init__(self, message: str, field: str = "") -> None:
        super().__init__(message)
        self.field = field


Part = tuple[str, str]  # ("text", literal) or ("field", name)


@dataclass(frozen=True, slots=True)
class Template:
    source: str
    parts: tuple[tuple[bool, tuple[Part, ...]], ...]  # (optional group?, its parts)

    @property
    def fields(self) -> frozenset[str]:
        return frozenset(v for _, parts in self.parts for kind, v in parts if kind == "field")

    def render(self, values: Mapping[str, str | None]) -> str:
        out = []
        for optional, parts in self.parts:
            pieces = []
            for kind, value in parts:
                if kind == "text":
                    pieces.append(value)
                    continue
                got = values.get(value)
                if not got:
                    break
                pieces.append(got)
            else:
                out.append("".join(pieces))
                continue
            if not optional:  # only "user" may stand outside a group, and it is always given
                raise TemplateError(f"field {{{value}}} has no value", value)
        return "".join(out)


def parse_template(source: str) -> Template:
    """The parsed template; TemplateError naming the problem (an unknown field: ``.field`` set)."""
    if not source or len(source) > 300:
        raise TemplateError("the username template must be 1-300 characters")
    groups: list[tuple[bool, tuple[Part, ...]]] = []
    current: list[Part] = []
    in_group = False
    for m in _TOKEN.finditer(source):
        token = m.group(0)
        if m.group(1) is not None:
            name = m.group(1)
            if name not in TEMPLATE_FIELDS:
                known = ", ".join(TEMPLATE_FIELDS)
                message = f"unknown field {{{name}}} in the username template (known: {known})"
                raise TemplateError(message, name)
            if not in_group and name != "user":
                message = f"field {{{name}}} must be inside [...]: not every connection has it"
                raise TemplateError(message, name)
            current.append(("field", name))
        elif token == "[":
            if in_group:
                raise TemplateError("groups [...] cannot nest")
            if current:
                groups.append((False, tuple(current)))
            current, in_group = [], True
        elif token == "]":
            if not in_group:
                raise TemplateError("']' without '['")
            groups.append((True, tuple(current)))
            current, in_group = [], False
        elif token in "{}" or not _LITERAL.fullmatch(token):
            raise TemplateError(f"unexpected {token!r} in the username template")
        else:
            current.append(("text", token))
    if in_group:
        raise TemplateError("'[' without ']'")
    if current:
        groups.append((False, tuple(current)))
    return Template(source, tuple(groups))


def session_token(service_id: str, sid: str) -> str:
    """The session id sent to the supplier: one per (service, customer session), never the customer's own
    text (two customers' session "a" must not share a supplier exit)."""
    return hashlib.sha256(f"{service_id}:{sid}".encode()).hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class Hop:
    """One supplier endpoint as dialled: scheme "http" or "socks5", where, and the rendered credentials."""

    scheme: str
    host: str
    port: int
    username: str
    password: str


class HopFailed(Exception):
    """The supplier could not give the tunnel: ``reason`` "refused" (it answered no, or its port is
    closed), "timeout", "connect" (unreachable) or "protocol" (it spoke something else)."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


def _host_port(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def connect_request(hop: Hop, host: str, port: int) -> bytes:
    target = _host_port(host, port)
    lines = [f"CONNECT {target} HTTP/1.1", f"Host: {target}"]
    if hop.username or hop.password:
        token = base64.b64encode(f"{hop.username}:{hop.password}".encode()).decode()
        lines.append(f"Proxy-Authorization: Basic {token}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def connect_reply(buf: bytes | bytearray) -> tuple[int, int] | None:
    """(status, head length) of a complete CONNECT reply head in ``buf``; None while incomplete."""
    end = buf.find(b"\r\n\r\n")
    if end < 0:
        if len(buf) > MAX_HEAD:
            raise HopFailed("supplier reply head too long", "protocol")
        return None
    line = bytes(buf[: buf.find(b"\r\n")]).split(b" ", 2)
    if len(line) < 2 or not line[0].startswith(b"HTTP/1.") or not line[1].isdigit():
        raise HopFailed("supplier sent no HTTP reply", "protocol")
    return int(line[1]), end + 4


def socks_greeting(hop: Hop) -> bytes:
    return b"\x05\x01\x02" if hop.username or hop.password else b"\x05\x01\x00"


def socks_auth(hop: Hop) -> bytes:
    user, password = hop.username.encode(), hop.password.encode()
    if len(user) > 255 or len(password) > 255:
        raise HopFailed("supplier credentials longer than 255 bytes", "protocol")
    return bytes((1, len(user))) + user + bytes((len(password),)) + password


def socks_request(host: str, port: int) -> bytes:
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        name = host.encode("idna")
        address = b"\x03" + bytes((len(name),)) + name
    else:
        address = (b"\x01" if ip.version == 4 else b"\x04") + ip.packed
    return b"\x05\x01\x00" + address + struct.pack("!H", port)


def socks_reply_length(buf: bytes | bytearray) -> int | None:
    """The length of a complete SOCKS5 CONNECT reply at the start of ``buf``; None while incomplete."""
    if len(buf) < 5:
        return None
    atyp = buf[3]
    if atyp == 1:
        size = 4 + 4 + 2
    elif atyp == 4:
        size = 4 + 16 + 2
    elif atyp == 3:
        size = 4 + 1 + buf[4] + 2
    else:
        raise HopFailed("supplier sent a malformed SOCKS5 reply", "protocol")
    return size if len(buf) >= size else None


class _Handshake(asyncio.Protocol):
    """Reads the supplier's replies into a buffer until the tunnel is up."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buf = bytearray()
        self.closed = False
        self.waiter: asyncio.Future[None] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def _wake(self) -> None:
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(None)

    def data_received(self, data: bytes) -> None:
        self.buf += data
        self._wake()

    def eof_received(self) -> bool:
        self.closed = True
        self._wake()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._wake()

    async def need(self, ready: Callable[[bytearray], Any]) -> Any:
        """Wait until ``ready(buf)`` is not None (HopFailed "refused" if the supplier hangs up first)."""
        while True:
            got = ready(self.buf)
            if got is not None:
                return got
            if self.closed:
                raise HopFailed("supplier closed the connection during the handshake", "refused")
            self.waiter = asyncio.get_running_loop().create_future()
            await self.waiter

    def take(self, n: int) -> None:
        del self.buf[:n]


async def _handshake(hs: _Handshake, hop: Hop, host: str, port: int) -> None:
    t = hs.transport
    assert t is not None
    if hop.scheme == "http":
        t.write(connect_request(hop, host, port))
        status, size = await hs.need(connect_reply)
        hs.take(size)
        if status != 200:
            raise HopFailed(f"supplier answered {status} to CONNECT", "refused")
        return
    t.write(socks_greeting(hop))
    method = await hs.need(lambda b: bytes(b[:2]) if len(b) >= 2 else None)
    hs.take(2)
    if method[0] != 5:
        raise HopFailed("supplier is not a SOCKS5 proxy", "protocol")
    if method[1] == 2:
        t.write(socks_auth(hop))
        status = await hs.need(lambda b: bytes(b[:2]) if len(b) >= 2 else None)
        hs.take(2)
        if status[1] != 0:
            raise HopFailed("supplier refused the credentials", "refused")
    elif method[1] != 0:
        raise HopFailed("supplier accepts none of our SOCKS5 methods", "refused")
    t.write(socks_request(host, port))
    size = await hs.need(socks_reply_length)
    rep = hs.buf[1]
    hs.take(size)
    if rep != 0:
        raise HopFailed(f"supplier answered SOCKS5 reply {rep} to CONNECT", "refused")


async def open_through(hop: Hop, host: str, port: int, factory: Callable[[], P],
                       timeout: float) -> tuple[asyncio.Transport, P]:
    """A tunnel to host:port through ``hop``, handed to ``factory()``'s protocol (bytes the supplier
    sent after its reply are delivered to it first); HopFailed when the supplier cannot give it."""
    loop = asyncio.get_running_loop()
    hs = _Handshake()
    transport: asyncio.Transport | None = None
    try:
        async with asyncio.timeout(timeout):
            raw, _ = await loop.create_connection(lambda: hs, hop.host, hop.port)
            transport = raw
            await _handshake(hs, hop, host, port)
    except TimeoutError as exc:
        if transport is not None:
            transport.close()
        raise HopFailed(f"supplier {hop.host}:{hop.port} timed out", "timeout") from exc
    except ConnectionRefusedError as exc:
        if transport is not None:
            transport.close()
        raise HopFailed(f"supplier {hop.host}:{hop.port} refused the connection", "refused") from exc
    except OSError as exc:
        if transport is not None:
            transport.close()
        raise HopFailed(f"cannot connect to supplier {hop.host}:{hop.port}: {exc}", "connect") from exc
    except BaseException:
        if transport is not None:
            transport.close()
        raise
    assert transport is not None
    transport.pause_reading()
    protocol = factory()
    transport.set_protocol(protocol)
    protocol.connection_made(transport)
    if hs.buf and isinstance(protocol, asyncio.Protocol):
        protocol.data_received(bytes(hs.buf))
    transport.resume_reading()
    return transport, protocol
