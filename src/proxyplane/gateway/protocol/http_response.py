"""HTTP/1.1 forward-proxy protocol, sans-IO, the response side: ``ResponseFramer`` finds where an upstream
response ends (so the upstream connection can be kept alive), and the replies the proxy itself sends
(``build_reply``, ``auth_required``, ``CONNECT_ESTABLISHED``). The request side is ``http_proxy.py``.
"""

from __future__ import annotations

from typing import cast

from .errors import ProtocolError
from .framing import ChunkedFramer, is_chunked, parse_content_length
from .http_proxy import _CACHE_HEAD_MAX, _CACHE_SIZE, MAX_HEAD, REALM, _connection_tokens, _split_head


class ResponseFramer:
    """Upstream side: where does this response end, may the upstream connection be reused?

    ``feed`` returns the bytes of this response found in ``data`` (head bytes are held until the head is
    complete); leftover bytes after the end are in ``extra``. ``eof()`` tells whether an EOF ends it.
    """

    __slots__ = ("_head_only", "_buf", "_chunked", "_left", "done", "status", "reusable", "close_delimited",
                 "extra", "started")

    def __init__(self, method: bytes) -> None:
        self._head_only = method == b"HEAD"
        self._buf = b""
        self._chunked: ChunkedFramer | None = None  # the framer of a chunked body
        self._left = 0  # bytes still to come of a Content-Length body
        self.done = False
        self.status = 0
        self.reusable = True
        self.close_delimited = False
        self.extra = b""
        self.started = False

    def feed(self, data: bytes) -> bytes:
        if self.done:
            self.extra += data
            return b""
        self.started = True
        out = b""
        while data:
            left = self._left
            if left:  # in a Content-Length body
                n = len(data)
                if n < left:
                    self._left = left - n
                    return out + data
                self._left = 0
                self.done = True
                if n > left:
                    self.extra = data[left:]
                    return out + data[:left]
                return out + data
            body = self._chunked
            if body is not None:
                n = body.feed(data)
                out += data[:n] if n < len(data) else data
                data = data[n:]
                if body.done:
                    self.done = True
                    self.extra = data
                    return out
            elif self.close_delimited:
                return out + data
            else:
                buf = self._buf + data if self._buf else data
                idx = buf.find(b"\r\n\r\n")
                if idx < 0:
                    if len(buf) > MAX_HEAD:
                        raise ProtocolError("response head too large", status=502)
                    self._buf = buf
                    return out
                self._buf = b""
                out += buf[: idx + 4]
                data = buf[idx + 4 :]
                self._parse_head(buf[:idx])
                if self.done:
                    self.extra = data
                    return out
        return out

    def eof(self) -> bool:
        """True when an EOF from the upstream completes this response (close-delimited body)."""
        return self.close_delimited and not self.done

    def _parse_head(self, head: bytes) -> None:
        parsed = _RESPONSE_CACHE.get(head)
        if parsed is None:
            parsed = _parse_response_head(head)
            if len(head) <= _CACHE_HEAD_MAX:
                if len(_RESPONSE_CACHE) >= _CACHE_SIZE:
                    _RESPONSE_CACHE.clear()
                _RESPONSE_CACHE[head] = parsed
        status, reusable, body = parsed
        self.status = status
        if 100 <= status < 200:
            return  # informational: the final response follows
        self.reusable = reusable
        if self._head_only or status in (204, 304):
            self.done = True
        elif body == _CLOSE_DELIMITED:
            self.close_delimited = True
            self.reusable = False
        elif type(body) is int:
            if body < 0:
                self._chunked = ChunkedFramer()
            else:
                self._left = body
                self.done = body == 0
        else:
            raise ProtocolError(cast(str, body), status=502)


_CLOSE_DELIMITED = -2
# Upstream response heads repeat too (the same resource, within the second of its Date header): parsed
# once, then looked up. (status, reusable, body framing: -1 chunked, -2 close-delimited, n >= 0
# Content-Length n, or the message of the ProtocolError a malformed framing raises when the response has
# a body).
_RESPONSE_CACHE: dict[bytes, tuple[int, bool, int | str]] = {}


def _parse_response_head(head: bytes) -> tuple[int, bool, int | str]:
    first, headers = _split_head(head)
    if len(first) < 2 or first[0] not in (b"HTTP/1.1", b"HTTP/1.0") or not first[1].isdigit() \
            or len(first[1]) != 3:
        raise ProtocolError("malformed upstream status line", status=502)
    status = int(first[1])
    tokens = _connection_tokens(headers)
    if first[0] == b"HTTP/1.1":
        reusable = b"close" not in tokens
    else:
        reusable = b"keep-alive" in tokens
    if 100 <= status < 200:
        if status == 101:
            raise ProtocolError("protocol upgrade is not supported through the proxy", status=502)
        return status, reusable, _CLOSE_DELIMITED
    te = [v for n, v, _ in headers if n == b"transfer-encoding"]
    cl = [v for n, v, _ in headers if n == b"content-length"]
    body: int | str
    try:
        if te:
            is_chunked(te)
            body = -1
        elif cl:
            body = parse_content_length(cl)
        else:
            body = _CLOSE_DELIMITED
    except ProtocolError as exc:
        body = str(exc)
    return status, reusable, body


REASONS = {
    200: "OK", 400: "Bad Request", 402: "Payment Required", 403: "Forbidden", 404: "Not Found",
    405: "Method Not Allowed", 407: "Proxy Authentication Required", 408: "Request Timeout",
    429: "Too Many Requests",
    431: "Request Header Fields Too Large", 500: "Internal Server Error", 501: "Not Implemented",
    502: "Bad Gateway", 503: "Service Unavailable", 504: "Gateway Timeout", 505: "HTTP Version Not Supported",
}

CONNECT_ESTABLISHED = b"HTTP/1.1 200 Connection established\r\n\r\n"


def build_reply(status: int, message: str = "", *, headers: tuple[tuple[str, str], ...] = (),
                close: bool = True) -> bytes:
    """A complete small response from the proxy itself (errors, 407)."""
    reason = REASONS.get(status, "Error")
    body = ((message or reason) + "\n").encode("utf-8")
    lines = [f"HTTP/1.1 {status} {reason}", "Content-Type: text/plain; charset=utf-8",
             f"Content-Length: {len(body)}"]
    lines += [f"{k}: {v}" for k, v in headers]
    if close:
        lines.append("Connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8") + body


def auth_required(message: str = "proxy authentication required") -> bytes:
    return build_reply(407, message, headers=(("Proxy-Authenticate", f'Basic realm="{REALM}"'),))
