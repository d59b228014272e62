"""cli/http_writes.py: serve's HTTP protocol sends each response in one socket write, with the same bytes
as uvicorn's own httptools protocol (plain, keep-alive, streamed and closing responses)."""

from __future__ import annotations

import asyncio
import socket
from typing import Any, cast

import pytest
import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from proxyplane.cli.http_writes import WriteCoalescingProtocol

pytestmark = pytest.mark.anyio


async def _app(scope: Any, receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    await receive()
    if scope["path"] == "/stream":  # headers, then two chunks in separate loop passes
        await send(
            {"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]}
        )
        for part in (b"one", b"two"):
            await asyncio.sleep(0.01)
            await send({"type": "http.response.body", "body": part, "more_body": True})
        await send({"type": "http.response.body", "body": b""})
        return
    body = b'{"ok":true}'
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": 201, "headers": headers})
    await send({"type": "http.response.body", "body": body})


SENDS: list[int] = []


class _Counted:
    """The real transport, its writes counted (what reaches the socket)."""

    def __init__(self, transport: Any) -> None:
        self.transport = transport

    def write(self, data: bytes) -> None:
        SENDS.append(len(data))
        self.transport.write(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.transport, name)


class _CountedCoalescing(WriteCoalescingProtocol):
    def connection_made(self, transport: Any) -> None:  # type: ignore[override]
        super().connection_made(cast(Any, _Counted(transport)))


class _CountedPlain(HttpToolsProtocol):
    def connection_made(self, transport: Any) -> None:  # type: ignore[override]
        super().connection_made(cast(Any, _Counted(transport)))


async def _exchange(protocol: type[asyncio.Protocol], requests: list[bytes]) -> tuple[bytes, int]:
    """Start a server with `protocol`, send `requests` on one connection; the bytes read and the writes."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        _app, http=protocol, log_config=None, access_log=False, date_header=False, server_header=False
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        while not server.started:
            await asyncio.sleep(0.01)
        SENDS.clear()
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        got = b""
        for request in requests:
            writer.write(request)
            await writer.drain()
            await asyncio.sleep(0.1)
        writer.write_eof()
        got = await asyncio.wait_for(reader.read(), 5)
        writer.close()
        return got, len(SENDS)
    finally:
        server.should_exit = True
        await task


async def test_one_write_per_response_and_the_same_bytes() -> None:
    plain = b"POST /order HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n\r\n{}"
    closing = b"POST /order HTTP/1.1\r\nHost: t\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}"
    stream = b"GET /stream HTTP/1.1\r\nHost: t\r\n\r\n"
    requests = [plain, plain, stream, closing]
    theirs, their_writes = await _exchange(_CountedPlain, requests)
    ours, our_writes = await _exchange(_CountedCoalescing, requests)
    assert ours == theirs
    assert theirs.count(b"HTTP/1.1 201 Created") == 3 and b"one" in theirs and b"two" in theirs
    # uvicorn: headers and body apart for each of the three plain responses, ours one write each; the
    # stream (headers, two chunks each after a wait, the terminator): 4 writes, ours 3 (what nothing
    # follows in the same loop pass leaves at its end; the last chunk and the terminator together)
    assert their_writes == 2 * 3 + 4
    assert our_writes == 3 + 3
