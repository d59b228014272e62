"""The one exception type the sans-IO parsers raise."""

from __future__ import annotations


class ProtocolError(Exception):
    """Malformed or unsupported input; the connection that sent it should be answered and closed.

    ``status`` is the HTTP status to answer with (HTTP parser), ``reply`` the SOCKS5 REP code to
    answer with (SOCKS5 parser) or None when no reply can be sent at this stage.
    """

    def __init__(self, message: str, *, status: int = 400, reply: int | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.reply = reply
