"""uvicorn's httptools protocol with one socket write per response (issue 15: serve CPU per order).

uvicorn writes a response's status line and headers when the app sends `http.response.start`, and the
body when it sends `http.response.body`: two `send()` calls on the socket, two packets, and a client
(or proxy) on the same host woken twice. On loopback that kernel work is charged to the sender: the
response writes were ~16 % of `proxyplane serve`'s CPU under 20 buyers (py-spy --native, issue 15).

`WriteCoalescingProtocol` gives each connection's request cycles a transport that holds a write for the
rest of the current event-loop pass: the next write (the body, right after the headers in the same
pass) goes out joined with it in one `send()`; a write nothing follows in that pass (a streamed
response's headers, `100 Continue`) goes out at the end of the pass. The bytes on the wire and their
order are unchanged; closing the transport sends what is held first. Everything else (reading, flow
control, addresses) is the real transport's.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol


class CoalescedWrites:
    """A connection's transport whose writes of one event-loop pass leave in as few sends as possible."""

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self.transport = transport
        self._loop = loop
        self._held: bytes | None = None
        self._flush_due = False

    def write(self, data: bytes) -> None:
        if not data:
            return
        held = self._held
        if held is None:
            self._held = data
            if not self._flush_due:
                self._flush_due = True
                self._loop.call_soon(self.flush)
            return
        self._held = None
        self.transport.write(held + data)

    def writelines(self, lines: Any) -> None:
        for data in lines:
            self.write(data)

    def flush(self) -> None:
        """Send what is held (at the end of the pass, or before the transport closes)."""
        self._flush_due = False
        held, self._held = self._held, None
        if held is not None and not self.transport.is_closing():
            self.transport.write(held)

    def close(self) -> None:
        self.flush()
        self.transport.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.transport, name)


class WriteCoalescingProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol; its request cycles write through `CoalescedWrites`."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.transport = CoalescedWrites(transport, self.loop)  # type: ignore[assignment]

    def handle_websocket_upgrade(self) -> None:
        writes = self.transport
        if isinstance(writes, CoalescedWrites):  # the websocket protocol gets the real transport
            writes.flush()
            self.transport = writes.transport
        super().handle_websocket_upgrade()
