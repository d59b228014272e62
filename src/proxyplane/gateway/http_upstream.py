"""The upstream side of a plain HTTP request (http_forward.py): a keep-alive connection to an origin,
pooled between requests, attached to the client connection whose request it serves."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from .http_forward import HttpForwarding

_CONNECTING = 1  # reasons the client transport's reading is paused (bit mask)
_BUFFER_FULL = 2
_UPSTREAM_FULL = 4
_SPEED = 8  # a request body past the service's speed limit (speed.py)


class HttpUpstream(asyncio.Protocol):
    def __init__(self, key: tuple[str, str, int]) -> None:
        self.key = key
        self.transport: asyncio.Transport | None = None
        self.client: HttpForwarding | None = None
        self.idle_since = 0.0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        client = self.client
        if client is None:  # unsolicited bytes on an idle connection: not reusable
            if self.transport is not None:
                self.transport.close()
            return
        client.response_data(data)

    def eof_received(self) -> bool:
        if self.client is not None:
            self.client.upstream_gone(self)
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        if self.client is not None:
            self.client.upstream_gone(self)
        self.transport = None

    def pause_writing(self) -> None:
        if self.client is not None:
            self.client.pause(_UPSTREAM_FULL)

    def resume_writing(self) -> None:
        if self.client is not None:
            self.client.resume(_UPSTREAM_FULL)
