"""The demo origin: a tiny HTTP server `proxyplane serve` starts on a loopback address when
PROXYPLANE_DEMO_ORIGIN is set (scripts/run.sh sets 127.0.0.1:8090), so that the README's "try it" has a
destination on one machine without opening loopback to customers: the gateway lets exactly this
address:port through (destinations.py rule 2), nothing else on loopback.

Every request gets one JSON line: who asked (the peer address: the exit IP the request came from), the
method and the path; then the connection closes. It serves nothing else and reads at most one head.
"""

from __future__ import annotations

import asyncio
import contextlib
import json

from pydantic_settings import BaseSettings, SettingsConfigDict

from .destinations import endpoint

MAX_HEAD = 16 * 1024
READ_SECONDS = 10.0


class DemoOriginSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="PROXYPLANE_", extra="ignore")

    demo_origin: str = ""  # address:port (an IP literal), empty: no demo origin


def configured() -> tuple[str, int] | None:
    """The demo origin's address and port from the environment (ValueError when malformed)."""
    spec = DemoOriginSettings().demo_origin.strip()
    return endpoint(spec) if spec else None


async def _answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        async with asyncio.timeout(READ_SECONDS):
            head = await reader.readuntil(b"\r\n\r\n")
        method, path, _ = head[: head.index(b"\r\n")].decode("latin-1").split(" ", 2)
        peer = writer.get_extra_info("peername")
        body = (
            json.dumps(
                {"origin": "proxyplane demo origin", "client_ip": peer[0], "method": method, "path": path}
            ).encode()
            + b"\n"
        )
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n"
            b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
        )
        await writer.drain()
    except (TimeoutError, ValueError, asyncio.LimitOverrunError, asyncio.IncompleteReadError, OSError):
        pass
    finally:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()


async def start(host: str, port: int) -> asyncio.Server:
    return await asyncio.start_server(_answer, host, port, limit=MAX_HEAD, reuse_address=True)
