"""Message-body framing shared by the HTTP request and response parsers (sans-IO).

Bodies are relayed as they arrived (chunked stays chunked); these classes only find where a body ends.
"""

from __future__ import annotations

from .errors import ProtocolError

MAX_CHUNK_LINE = 4096
MAX_TRAILERS = 65536

_SIZE, _DATA, _DATA_END, _TRAILER, _DONE = range(5)


class ChunkedFramer:
    """Finds the end of a chunked body. ``feed`` returns how many bytes of ``data`` belong to the body."""

    __slots__ = ("_state", "_remaining", "_line", "_trailer_bytes", "done")

    def __init__(self) -> None:
        self._state = _SIZE
        self._remaining = 0
        self._line = b""
        self._trailer_bytes = 0
        self.done = False

    def _take_line(self, data: bytes, pos: int, limit: int) -> tuple[bytes | None, int]:
        idx = data.find(b"\n", pos)
        if idx < 0:
            self._line += data[pos:]
            if len(self._line) > limit:
                raise ProtocolError("chunked framing line too long")
            return None, len(data)
        line = self._line + data[pos:idx]
        self._line = b""
        if len(line) > limit:
            raise ProtocolError("chunked framing line too long")
        if not line.endswith(b"\r"):
            raise ProtocolError("chunked framing line without CRLF")
        return line[:-1], idx + 1

    def feed(self, data: bytes) -> int:
        pos = 0
        end = len(data)
        while pos < end and not self.done:
            state = self._state
            if state == _DATA:
                take = min(self._remaining, end - pos)
                pos += take
                self._remaining -= take
                if self._remaining == 0:
                    self._state = _DATA_END
                continue
            line, pos = self._take_line(data, pos, MAX_CHUNK_LINE if state != _TRAILER else MAX_TRAILERS)
            if line is None:
                break
            if state == _SIZE:
                size_text = line.split(b";", 1)[0].strip(b" \t")
                if not size_text or len(size_text) > 16 or size_text.strip(b"0123456789abcdefABCDEF"):
                    raise ProtocolError("bad chunk size")
                size = int(size_text, 16)
                if size == 0:
                    self._state = _TRAILER
                else:
                    self._remaining = size
                    self._state = _DATA
            elif state == _DATA_END:
                if line:
                    raise ProtocolError("chunk data not followed by CRLF")
                self._state = _SIZE
            else:  # trailer section: lines until an empty one
                if not line:
                    self._state = _DONE
                    self.done = True
                else:
                    self._trailer_bytes += len(line)
                    if self._trailer_bytes > MAX_TRAILERS:
                        raise ProtocolError("chunked trailers too long")
        return pos


class LengthFramer:
    """Finds the end of a Content-Length body."""

    __slots__ = ("_remaining", "done")

    def __init__(self, length: int) -> None:
        self._remaining = length
        self.done = length == 0

    def feed(self, data: bytes) -> int:
        take = min(self._remaining, len(data))
        self._remaining -= take
        if self._remaining == 0:
            self.done = True
        return take


def parse_content_length(values: list[bytes]) -> int:
    """One or more Content-Length values (repeated headers or lists) that must all agree."""
    found: int | None = None
    for value in values:
        for part in value.split(b","):
            part = part.strip(b" \t")
            if not part.isdigit() or len(part) > 18:
                raise ProtocolError("bad Content-Length")
            length = int(part)
            if found is not None and found != length:
                raise ProtocolError("conflicting Content-Length")
            found = length
    if found is None:
        raise ProtocolError("bad Content-Length")
    return found


def is_chunked(values: list[bytes]) -> bool:
    """Transfer-Encoding values: True when chunked is the final coding; other final codings are refused."""
    codings = [c.strip(b" \t").lower() for v in values for c in v.split(b",") if c.strip(b" \t")]
    if not codings:
        raise ProtocolError("empty Transfer-Encoding")
    if codings[-1] != b"chunked" or codings.count(b"chunked") > 1:
        raise ProtocolError("unsupported Transfer-Encoding", status=501)
    return True
