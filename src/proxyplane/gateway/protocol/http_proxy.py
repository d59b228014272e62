"""HTTP/1.1 forward-proxy protocol, sans-IO: client requests in, events out; upstream response framing.

``HttpRequestParser.feed(bytes)`` returns events (``ForwardRequest``, ``ConnectRequest``, ``BodyData``,
``EndOfRequest``) and raises ``ProtocolError`` for anything malformed. After ``EndOfRequest`` the parser
holds further (pipelined) bytes until ``resume()`` is called once the response has been relayed.
The response side (``ResponseFramer``, the proxy's own replies) is in ``http_response.py``.
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
import re
from dataclasses import dataclass
from typing import final

from .errors import ProtocolError
from .framing import ChunkedFramer, LengthFramer, is_chunked, parse_content_length

MAX_HEAD = 64 * 1024
MAX_HEADERS = 100
REALM = "proxyplane"

_TOKEN = rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+"
_HEADER_LINE = _TOKEN + rb":[^\x00\r\n]*"
_HEADER_BLOCK_RE = re.compile(_HEADER_LINE + rb"(?:\r\n" + _HEADER_LINE + rb")*")
_METHOD_RE = re.compile(_TOKEN)
_HOST_RE = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9_.\-]{0,252})")
# Hop-by-hop headers never forwarded upstream (plus whatever Connection names).
_HOP_BY_HOP = frozenset(
    {b"connection", b"proxy-connection", b"keep-alive", b"proxy-authorization", b"proxy-authenticate",
     b"te", b"trailer", b"upgrade", b"host"}
)


@dataclass(slots=True, frozen=True)
class Credentials:
    login: str
    password: str


@final
@dataclass(slots=True)
class ForwardRequest:
    """An absolute-form request, already rewritten to origin form in ``head`` for the upstream."""

    method: bytes
    host: str
    port: int
    path: bytes
    version: bytes
    auth: Credentials | None
    keep_alive: bool
    has_body: bool
    head: bytes


@final
@dataclass(slots=True, frozen=True)
class ConnectRequest:
    host: str
    port: int
    version: bytes
    auth: Credentials | None


@final
@dataclass(slots=True)
class BodyData:
    data: bytes


@final
@dataclass(slots=True)
class EndOfRequest:
    pass


Event = ForwardRequest | ConnectRequest | BodyData | EndOfRequest
END_OF_REQUEST = EndOfRequest()

_AUTH_CACHE: dict[bytes, Credentials] = {}
_CACHE_SIZE = 4096
_CACHE_HEAD_MAX = 2048  # longer heads are parsed every time (bounds the caches' memory)

# What a request head parses to: a ConnectRequest, or the fields of a ForwardRequest with the body
# framing as an int (0 none, -1 chunked, n > 0 Content-Length n).
_Forward = tuple[bytes, str, int, bytes, bytes, "Credentials | None", bool, int, bytes]
# Request heads repeat byte for byte on a keep-alive connection (same client, target and credentials):
# a head is parsed once, then looked up. Only the parse is cached, the result is a pure function of the
# head bytes; authentication (the access-table lookup) still happens for every request, in the caller.
_HEAD_CACHE: dict[bytes, ConnectRequest | _Forward] = {}


def parse_proxy_authorization(value: bytes) -> Credentials:
    """``Basic base64(login:password)`` → Credentials; anything else raises ProtocolError (status 407)."""
    cached = _AUTH_CACHE.get(value)
    if cached is not None:
        return cached
    scheme, _, token = value.strip().partition(b" ")
    if scheme.lower() != b"basic":
        raise ProtocolError("unsupported proxy authorization scheme", status=407)
    try:
        decoded = base64.b64decode(token.strip(), validate=True).decode("utf-8")
    except (binascii.Error, ValueError) as exc:
        raise ProtocolError("malformed Proxy-Authorization", status=407) from exc
    login, sep, password = decoded.partition(":")
    if not sep:
        raise ProtocolError("malformed Proxy-Authorization", status=407)
    creds = Credentials(login, password)
    if len(_AUTH_CACHE) > _CACHE_SIZE:
        _AUTH_CACHE.clear()
    _AUTH_CACHE[value] = creds
    return creds


def parse_authority(authority: bytes, default_port: int | None) -> tuple[str, int]:
    """``host:port`` / ``[v6]:port`` → (host, port); host is a DNS name, IPv4 or IPv6 literal."""
    try:
        text = authority.decode("ascii")
    except UnicodeDecodeError as exc:
        raise ProtocolError("non-ASCII host") from exc
    if text.startswith("["):
        close = text.find("]")
        if close < 0:
            raise ProtocolError("bad IPv6 host")
        host, rest = text[1:close], text[close + 1 :]
        try:
            ipaddress.IPv6Address(host)
        except ValueError as exc:
            raise ProtocolError("bad IPv6 host") from exc
    else:
        host, colon, port_text = text.partition(":")
        rest = colon + port_text
        if not _HOST_RE.fullmatch(host):
            raise ProtocolError("bad host")
    if rest:
        if not rest.startswith(":") or not rest[1:].isdigit() or len(rest) > 6:
            raise ProtocolError("bad port")
        port = int(rest[1:])
    elif default_port is None:
        raise ProtocolError("port required")
    else:
        port = default_port
    if not 0 < port < 65536:
        raise ProtocolError("bad port")
    return host, port


def host_header(host: str, port: int) -> bytes:
    name = f"[{host}]" if ":" in host else host
    return (name if port == 80 else f"{name}:{port}").encode("ascii")


def _split_head(head: bytes) -> tuple[list[bytes], list[tuple[bytes, bytes, bytes]]]:
    """Head (without the final blank line) → (request/status line parts, [(lower name, value, raw line)])."""
    lines = head.split(b"\r\n")
    if len(lines) - 1 > MAX_HEADERS:
        raise ProtocolError("too many header fields", status=431)
    first_line = lines[0]
    first = first_line.split(b" ", 2)
    headers: list[tuple[bytes, bytes, bytes]] = []
    if len(lines) == 1:
        return first, headers
    # every header line is ``token ":" value``: one match for the whole block rather than one per line
    if _HEADER_BLOCK_RE.fullmatch(head, len(first_line) + 2) is None:
        raise ProtocolError("malformed header line")
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        headers.append((name.lower(), value.strip(b" \t"), line))
    return first, headers


def _connection_tokens(headers: list[tuple[bytes, bytes, bytes]]) -> set[bytes]:
    tokens: set[bytes] = set()
    for name, value, _ in headers:
        if name == b"connection" or name == b"proxy-connection":
            tokens.update(t.strip(b" \t").lower() for t in value.split(b","))
    return tokens


class HttpRequestParser:
    """Client side of an HTTP proxy connection."""

    __slots__ = ("_buf", "_framer", "_paused", "_tunnel", "max_head")

    def __init__(self, max_head: int = MAX_HEAD) -> None:
        self._buf = b""
        self._framer: ChunkedFramer | LengthFramer | None = None
        self._paused = False
        self._tunnel = False
        self.max_head = max_head

    @property
    def buffered(self) -> int:
        return len(self._buf)

    def feed(self, data: bytes) -> list[Event]:
        if self._tunnel:
            raise ProtocolError("connection is a tunnel now")
        if not self._buf and not self._paused and self._framer is None and data[-4:] == b"\r\n\r\n":
            # The common keep-alive case: ``data`` is one whole bodiless request whose head was seen
            # before. (A cached head never contains CRLFCRLF nor ends in CRLF, so ``data`` holds nothing
            # after it; a head that is not cached goes the long way.)
            parsed = _HEAD_CACHE.get(data[:-4])
            if type(parsed) is tuple and not parsed[7] and len(data) - 4 <= self.max_head:
                method, host, port, path, version, auth, keep_alive, _, out = parsed
                self._paused = True
                return [ForwardRequest(method, host, port, path, version, auth, keep_alive, False, out),
                        END_OF_REQUEST]
        self._buf = self._buf + data if self._buf else data
        if self._paused:
            return []
        return self._parse()

    def resume(self) -> list[Event]:
        """The previous response is done: parse the next (possibly already buffered) request."""
        self._paused = False
        return self._parse() if self._buf else []

    def take_rest(self) -> bytes:
        """Bytes received after a CONNECT head (they belong to the tunnel)."""
        rest, self._buf = self._buf, b""
        return rest

    def _parse(self) -> list[Event]:
        events: list[Event] = []
        while self._buf and not self._paused and not self._tunnel:
            framer = self._framer
            if framer is None:
                if not self._parse_head(events):
                    break
                continue
            n = framer.feed(self._buf)
            if n:
                events.append(BodyData(self._buf[:n]))
                self._buf = self._buf[n:]
            if framer.done:
                self._end(events)
        return events

    def _end(self, events: list[Event]) -> None:
        self._framer = None
        self._paused = True
        events.append(END_OF_REQUEST)

    def _parse_head(self, events: list[Event]) -> bool:
        buf = self._buf
        if buf[:1] in (b"\r", b"\n"):  # tolerate stray CRLF between requests (RFC 9112 2.2)
            self._buf = buf.lstrip(b"\r\n")
            return bool(self._buf)
        idx = buf.find(b"\r\n\r\n")
        if idx < 0:
            if len(buf) > self.max_head:
                raise ProtocolError("request head too large", status=431)
            return False
        if idx > self.max_head:
            raise ProtocolError("request head too large", status=431)
        head = buf[:idx]
        self._buf = buf[idx + 4 :]
        parsed = _HEAD_CACHE.get(head)
        if parsed is None:
            parsed = _parse_request_head(head)
            if idx <= _CACHE_HEAD_MAX:
                if len(_HEAD_CACHE) >= _CACHE_SIZE:
                    _HEAD_CACHE.clear()
                _HEAD_CACHE[head] = parsed
        if type(parsed) is ConnectRequest:
            self._tunnel = True
            events.append(parsed)
            return True
        method, host, port, path, version, auth, keep_alive, body, out = parsed
        if body:
            self._framer = ChunkedFramer() if body < 0 else LengthFramer(body)
        events.append(ForwardRequest(method, host, port, path, version, auth, keep_alive, body != 0, out))
        if not body:
            self._end(events)
        return True


def _parse_request_head(head: bytes) -> ConnectRequest | _Forward:
    """A request head (without the final blank line) → ConnectRequest or the ForwardRequest fields;
    raises ProtocolError."""
    first, headers = _split_head(head)
    if len(first) != 3:
        raise ProtocolError("malformed request line")
    method, target, version = first
    if version != b"HTTP/1.1" and version != b"HTTP/1.0":
        raise ProtocolError("unsupported HTTP version", status=505)
    if not _METHOD_RE.fullmatch(method):
        raise ProtocolError("bad method")
    auth = None
    te: list[bytes] = []
    cl: list[bytes] = []
    for name, value, _ in headers:
        if name == b"proxy-authorization":
            if auth is not None:
                raise ProtocolError("repeated Proxy-Authorization", status=407)
            auth = parse_proxy_authorization(value)
        elif name == b"transfer-encoding":
            te.append(value)
        elif name == b"content-length":
            cl.append(value)
    if method == b"CONNECT":
        host, port = parse_authority(target, None)
        return ConnectRequest(host, port, version, auth)
    host, port, path = _parse_absolute(target)
    tokens = _connection_tokens(headers)
    keep_alive = b"close" not in tokens if version == b"HTTP/1.1" else b"keep-alive" in tokens
    body = 0
    if te:
        if cl or version == b"HTTP/1.0":
            raise ProtocolError("Transfer-Encoding with Content-Length or HTTP/1.0")
        is_chunked(te)
        body = -1
    elif cl:
        body = parse_content_length(cl)
    out = [method + b" " + path + b" " + version, b"Host: " + host_header(host, port)]
    for name, _value, line in headers:
        if name not in _HOP_BY_HOP and name not in tokens:
            out.append(line)
    out.append(b"\r\n")
    return method, host, port, path, version, auth, keep_alive, body, b"\r\n".join(out)


def _parse_absolute(target: bytes) -> tuple[str, int, bytes]:
    if target[:7].lower() != b"http://":
        if target[:8].lower() == b"https://":
            raise ProtocolError("https:// targets need CONNECT")
        raise ProtocolError("proxy requests need an absolute http:// target")
    rest = target[7:]
    cut = len(rest)
    for sep in (b"/", b"?", b"#"):
        i = rest.find(sep)
        if 0 <= i < cut:
            cut = i
    authority, path = rest[:cut], rest[cut:]
    if b"@" in authority:
        raise ProtocolError("userinfo in target")
    host, port = parse_authority(authority, 80)
    if b"#" in path:
        path = path.split(b"#", 1)[0]
    if not path.startswith(b"/"):
        path = b"/" + path
    return host, port, path
