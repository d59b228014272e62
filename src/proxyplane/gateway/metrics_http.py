"""The metrics and health port of a process (a gateway worker, or the API's optional separate port):

    GET /metrics   Prometheus text format (prometheus_client's default registry)
    GET /livez     200 while the event loop answers
    GET /readyz    200 when ``ready()`` says so ("degraded: ..." when ``degraded()`` names a fault), else 503

A few lines of asyncio, no framework: the gateway imports no web framework, and a scrape must not depend
on the customer-facing listeners. Bind it to a private address (PROXYPLANE_GATEWAY_METRICS_HOST)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, generate_latest

log = logging.getLogger(__name__)
HEAD_LIMIT = 8192

# ready() -> None when ready, else the reason it is not
Readiness = Callable[[], str | None]


class MetricsServer:
    def __init__(self, host: str, port: int, ready: Readiness, degraded: Readiness | None = None) -> None:
        self.host, self.port, self.ready, self.degraded = host, port, ready, degraded
        self.server: asyncio.Server | None = None

    async def start(self) -> None:
        self.server = await asyncio.start_server(self._serve, self.host, self.port, reuse_address=True)

    @property
    def bound_port(self) -> int:
        assert self.server is not None
        return int(self.server.sockets[0].getsockname()[1])

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10.0)
            parts = head[:HEAD_LIMIT].split(b"\r\n", 1)[0].split()
            method, path = (parts[0], parts[1].split(b"?", 1)[0]) if len(parts) >= 2 else (b"", b"")
            status, ctype, body = self.answer(method, path)
            writer.write(
                f"HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {len(body)}\r\n"
                "Connection: close\r\n\r\n".encode()
                + (body if method != b"HEAD" else b"")
            )
            await writer.drain()
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError, ConnectionError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    def answer(self, method: bytes, path: bytes) -> tuple[str, str, bytes]:
        text = "text/plain; charset=utf-8"
        if method not in (b"GET", b"HEAD"):
            return "405 Method Not Allowed", text, b"GET only\n"
        if path == b"/metrics":
            return "200 OK", CONTENT_TYPE_LATEST, generate_latest(REGISTRY)
        if path in (b"/livez", b"/health/live"):
            return "200 OK", text, b"ok\n"
        if path in (b"/readyz", b"/health/ready"):
            try:
                reason = self.ready()
            except Exception as exc:  # a readiness check that fails says not ready, never 500
                reason = f"readiness check failed: {type(exc).__name__}"
            if reason is None:
                # serving, but say what is wrong (a balancer keeps the node: it still serves)
                worse = self.degraded() if self.degraded is not None else None
                return "200 OK", text, f"degraded: {worse}\n".encode() if worse else b"ready\n"
            return "503 Service Unavailable", text, f"not ready: {reason}\n".encode()
        return "404 Not Found", text, b"/metrics, /livez, /readyz\n"

    async def close(self) -> None:
        if self.server is not None:
            self.server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.server.wait_closed(), 1.0)
            self.server = None
