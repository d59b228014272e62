"""A store that can be cut: a TCP forwarder on loopback between processes and PostgreSQL. Cutting it
closes the listener and resets every forwarded connection (what a crashed or restarted database host
looks like to its clients); restoring it listens again on the same port."""

from __future__ import annotations

import asyncio
import contextlib
from urllib.parse import urlsplit, urlunsplit


class StoreLink:
    def __init__(self, target_host: str, target_port: int, host: str = "127.0.0.1") -> None:
        self.target = (target_host, target_port)
        self.host, self.port = host, 0
        self.server: asyncio.Server | None = None
        self.writers: set[asyncio.StreamWriter] = set()

    @classmethod
    def for_url(cls, url: str) -> StoreLink:
        parts = urlsplit(url)
        return cls(parts.hostname or "127.0.0.1", parts.port or 5432)

    def url(self, url: str) -> str:
        """``url`` pointed at this link instead of the database."""
        parts = urlsplit(url)
        netloc = f"{parts.username}@{self.host}:{self.port}" if parts.username else f"{self.host}:{self.port}"
        return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))

    async def up(self) -> None:
        self.server = await asyncio.start_server(self._pipe, self.host, self.port, reuse_address=True)
        self.port = self.server.sockets[0].getsockname()[1]

    async def cut(self) -> None:
        if self.server is not None:
            self.server.close()
            self.server = None
        for w in list(self.writers):
            transport = w.transport
            with contextlib.suppress(Exception):
                transport.abort()
        self.writers.clear()

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.transport.abort()
            return
        if self.server is None:  # cut while this connection was being opened: it never gets through
            writer.transport.abort()
            up_writer.transport.abort()
            return
        self.writers |= {writer, up_writer}

        async def copy(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            with contextlib.suppress(Exception):
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            with contextlib.suppress(Exception):
                dst.transport.abort()

        await asyncio.gather(copy(reader, up_writer), copy(up_reader, writer))
        self.writers -= {writer, up_writer}
