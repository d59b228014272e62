"""A minimal HTTP/1.1 keep-alive client for the load benches: one connection, one request at a time, the
request head written as bytes and the response read by Content-Length (or chunks). It costs ~0.2 ms of
CPU per request where httpx costs ~1-1.5 ms, so on a 2-core machine the load generator takes little of
the CPU the server under test needs (bench/platform.py's order phases)."""

from __future__ import annotations

import asyncio
import json
from typing import Any
from urllib.parse import urlsplit


class RawConnection:
    """One keep-alive connection to `base` (http://host:port)."""

    def __init__(self, base: str) -> None:
        parts = urlsplit(base)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None

    async def _open(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        if self._reader is None or self._writer is None or self._writer.is_closing():
            self._reader, self._writer = await asyncio.open_connection(self.host, self.port)
        return self._reader, self._writer

    async def request(
        self, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None
    ) -> tuple[int, bytes]:
        """(status, body bytes) of one request; the body (if any) is sent as JSON."""
        reader, writer = await self._open()
        data = b"" if body is None else json.dumps(body).encode()
        head = [f"{method} {path} HTTP/1.1", f"Host: {self.host}:{self.port}"]
        head += [f"{k}: {v}" for k, v in (headers or {}).items()]
        if body is not None:
            head += ["Content-Type: application/json", f"Content-Length: {len(data)}"]
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + data)
        raw = await reader.readuntil(b"\r\n\r\n")
        status = int(raw[9:12])
        fields = {}
        for line in raw.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            fields[name.strip().lower()] = value.strip()
        if b"content-length" in fields:
            payload = await reader.readexactly(int(fields[b"content-length"]))
        elif fields.get(b"transfer-encoding", b"").lower() == b"chunked":
            chunks = []
            while True:
                size = int((await reader.readuntil(b"\r\n")).strip().split(b";")[0], 16)
                chunk = await reader.readexactly(size + 2)
                if size == 0:
                    break
                chunks.append(chunk[:-2])
            payload = b"".join(chunks)
        else:
            payload = await reader.read()  # the server closes the connection after the body
        if fields.get(b"connection", b"").lower() == b"close":
            await self.close()
        return status, payload

    async def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            try:
                await self._writer.wait_closed()
            except OSError:
                pass
        self._reader = self._writer = None
