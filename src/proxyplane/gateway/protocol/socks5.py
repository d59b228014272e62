"""SOCKS5 server side, sans-IO: RFC 1928 (greeting, CONNECT, UDP ASSOCIATE) and RFC 1929 (username/password).

``Socks5Parser.feed(bytes)`` returns events; the caller decides and answers with ``choose_method``,
``auth_result`` and ``reply``, which return the bytes to send. Malformed input raises ``ProtocolError``;
``error_reply(exc)`` gives the bytes (possibly empty) to send before closing.
"""

from __future__ import annotations

import functools
import ipaddress
import re
import socket
from dataclasses import dataclass

from .errors import ProtocolError

VERSION = 5
NO_AUTH = 0x00
USERPASS = 0x02
NO_ACCEPTABLE = 0xFF

CMD_CONNECT = 1
CMD_BIND = 2
CMD_UDP_ASSOCIATE = 3

ATYP_IPV4 = 1
ATYP_DOMAIN = 3
ATYP_IPV6 = 4

REP_SUCCEEDED = 0
REP_GENERAL_FAILURE = 1
REP_NOT_ALLOWED = 2
REP_NETWORK_UNREACHABLE = 3
REP_HOST_UNREACHABLE = 4
REP_CONNECTION_REFUSED = 5
REP_TTL_EXPIRED = 6
REP_COMMAND_NOT_SUPPORTED = 7
REP_ADDRESS_TYPE_NOT_SUPPORTED = 8

_DOMAIN_RE = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9_.\-]{0,254})")


@dataclass(slots=True, frozen=True)
class MethodsOffered:
    methods: frozenset[int]


@dataclass(slots=True, frozen=True)
class UserPass:
    login: str
    password: str


@dataclass(slots=True, frozen=True)
class SocksRequest:
    command: int
    host: str
    port: int
    atyp: int


Event = MethodsOffered | UserPass | SocksRequest

_GREETING, _WAIT_METHOD, _AUTH, _WAIT_AUTH, _REQUEST, _WAIT_REPLY, _DONE = range(7)


def domain_name(raw: bytes) -> str:
    """A request's DOMAINNAME bytes → the name; ProtocolError (reply: host unreachable) when it is not a
    plain ASCII host name."""
    try:
        host = raw.decode("ascii")
    except UnicodeDecodeError as exc:
        raise ProtocolError("non-ASCII domain name", reply=REP_HOST_UNREACHABLE) from exc
    if not _DOMAIN_RE.fullmatch(host):
        raise ProtocolError("bad domain name", reply=REP_HOST_UNREACHABLE)
    return host


def decode_address(data: bytes, pos: int) -> tuple[str, int, int, int] | None:
    """ATYP + address + port at ``pos`` → (host, port, atyp, end) or None when more bytes are needed."""
    if len(data) <= pos:
        return None
    atyp = data[pos]
    if atyp == ATYP_IPV4:
        end = pos + 1 + 4
        if len(data) < end + 2:
            return None
        host = socket.inet_ntop(socket.AF_INET, data[pos + 1 : end])
    elif atyp == ATYP_IPV6:
        end = pos + 1 + 16
        if len(data) < end + 2:
            return None
        host = str(ipaddress.IPv6Address(data[pos + 1 : end]))
    elif atyp == ATYP_DOMAIN:
        if len(data) < pos + 2:
            return None
        length = data[pos + 1]
        end = pos + 2 + length
        if len(data) < end + 2:
            return None
        host = domain_name(data[pos + 2 : end])
    else:
        raise ProtocolError(f"address type {atyp} not supported", reply=REP_ADDRESS_TYPE_NOT_SUPPORTED)
    port = int.from_bytes(data[end : end + 2], "big")
    return host, port, atyp, end + 2


def encode_address(host: str, port: int) -> bytes:
    """Host (IPv4/IPv6 literal or domain name) and port → ATYP + address + port."""
    return _encode_host(host) + port.to_bytes(2, "big")


@functools.lru_cache(maxsize=1024)
def _encode_host(host: str) -> bytes:
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        name = host.encode("ascii")
        if not 0 < len(name) < 256:
            raise ProtocolError("domain name length out of range") from None
        head = bytes((ATYP_DOMAIN, len(name))) + name
    else:
        head = bytes((ATYP_IPV4 if ip.version == 4 else ATYP_IPV6,)) + ip.packed
    return head


class Socks5Parser:
    """One SOCKS5 client connection up to the CONNECT/UDP ASSOCIATE reply."""

    __slots__ = ("_buf", "_state")

    def __init__(self) -> None:
        self._buf = b""
        self._state = _GREETING

    @classmethod
    def awaiting_reply(cls) -> Socks5Parser:
        """A parser for a connection whose request was read elsewhere (the tunnel engine's hand-over):
        the next call is ``reply``."""
        parser = cls()
        parser._state = _WAIT_REPLY
        return parser

    @property
    def done(self) -> bool:
        return self._state == _DONE

    def feed(self, data: bytes) -> list[Event]:
        if self._state == _DONE:
            raise ProtocolError("SOCKS5 negotiation already finished")
        self._buf += data
        events: list[Event] = []
        while True:
            event = self._step()
            if event is None:
                return events
            events.append(event)

    def _step(self) -> Event | None:
        buf = self._buf
        state = self._state
        if state == _GREETING:
            if len(buf) < 2:
                if buf and buf[0] != VERSION:
                    raise ProtocolError("not SOCKS5")
                return None
            if buf[0] != VERSION:
                raise ProtocolError("not SOCKS5")
            n = buf[1]
            if n == 0:
                raise ProtocolError("no authentication methods offered")
            if len(buf) < 2 + n:
                return None
            self._buf = buf[2 + n :]
            self._state = _WAIT_METHOD
            return MethodsOffered(frozenset(buf[2 : 2 + n]))
        if state == _AUTH:
            if len(buf) < 2:
                if buf and buf[0] != 1:
                    raise ProtocolError("bad username/password subnegotiation version")
                return None
            if buf[0] != 1:
                raise ProtocolError("bad username/password subnegotiation version")
            ulen = buf[1]
            if len(buf) < 3 + ulen:
                return None
            plen = buf[2 + ulen]
            end = 3 + ulen + plen
            if len(buf) < end:
                return None
            try:
                login = buf[2 : 2 + ulen].decode("utf-8")
                password = buf[3 + ulen : end].decode("utf-8")
            except UnicodeDecodeError as exc:
                raise ProtocolError("credentials are not UTF-8") from exc
            self._buf = buf[end:]
            self._state = _WAIT_AUTH
            return UserPass(login, password)
        if state == _REQUEST:
            if len(buf) < 4:
                if buf and buf[0] != VERSION:
                    raise ProtocolError("bad request version", reply=REP_GENERAL_FAILURE)
                return None
            if buf[0] != VERSION:
                raise ProtocolError("bad request version", reply=REP_GENERAL_FAILURE)
            command = buf[1]
            if command not in (CMD_CONNECT, CMD_UDP_ASSOCIATE):
                raise ProtocolError(f"command {command} not supported", reply=REP_COMMAND_NOT_SUPPORTED)
            decoded = decode_address(buf, 3)
            if decoded is None:
                return None
            host, port, atyp, end = decoded
            self._buf = buf[end:]
            self._state = _WAIT_REPLY
            return SocksRequest(command, host, port, atyp)
        return None

    def choose_method(self, method: int) -> bytes:
        """Answer the greeting; NO_ACCEPTABLE ends the negotiation (close after sending)."""
        if self._state != _WAIT_METHOD:
            raise ProtocolError("no greeting to answer")
        if method == NO_ACCEPTABLE:
            self._state = _DONE
        else:
            self._state = _AUTH if method == USERPASS else _REQUEST
        return bytes((VERSION, method))

    def auth_result(self, ok: bool) -> bytes:
        if self._state != _WAIT_AUTH:
            raise ProtocolError("no credentials to answer")
        self._state = _REQUEST if ok else _DONE
        return b"\x01\x00" if ok else b"\x01\x01"

    def reply(self, rep: int, host: str = "0.0.0.0", port: int = 0) -> bytes:
        if self._state != _WAIT_REPLY:
            raise ProtocolError("no request to answer")
        self._state = _DONE
        return bytes((VERSION, rep, 0)) + encode_address(host, port)

    def error_reply(self, exc: ProtocolError) -> bytes:
        """What to send before closing after ``exc`` was raised by ``feed``."""
        state = self._state
        self._state = _DONE
        if state == _AUTH:
            return b"\x01\x01"
        if state == _REQUEST:
            return bytes((VERSION, exc.reply or REP_GENERAL_FAILURE, 0)) + encode_address("0.0.0.0", 0)
        return b""

    def take_rest(self) -> bytes:
        rest, self._buf = self._buf, b""
        return rest
