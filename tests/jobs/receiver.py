"""A real HTTP webhook receiver on 127.0.0.1 (uvicorn in the test's event loop) that records requests and
can be told to fail, stopped and started again on the same port."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from standardwebhooks import Webhook

from proxyplane.core.settings import Settings


def loopback_webhooks(settings: Settings, **changes: Any) -> Settings:
    """`settings` for deliveries to a loopback receiver: http to 127.0.0.1 allowed, retries after 10-50 ms,
    a 3 s timeout; `changes` on top (e.g. webhook_max_attempts=1)."""
    update: dict[str, Any] = {
        "webhooks_allow_http_loopback": True,
        "webhook_retry_base_seconds": 0.01,
        "webhook_retry_max_seconds": 0.05,
        "webhook_timeout_seconds": 3.0,
    }
    return settings.model_copy(update=update | changes)


@dataclass
class Received:
    headers: dict[str, str]
    body: bytes

    @property
    def webhook_id(self) -> str:
        return self.headers["webhook-id"]

    @property
    def payload(self) -> dict[str, Any]:
        return dict(json.loads(self.body))


@dataclass
class Receiver:
    port: int = 0
    received: list[Received] = field(default_factory=list)
    fail_times: dict[str, int] = field(default_factory=dict)  # webhook-id -> answer 500 this many times
    status: int = 200
    _server: uvicorn.Server | None = None
    _task: asyncio.Task[None] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook?src=test"

    async def app(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        assert scope["type"] == "http"
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        msg_id = headers.get("webhook-id", "")
        status = self.status
        if self.fail_times.get(msg_id, 0) > 0:
            self.fail_times[msg_id] -= 1
            status = 500
        elif status < 300:
            self.received.append(Received(headers, body))  # only what was accepted
        await send(
            {"type": "http.response.start", "status": status, "headers": [(b"content-type", b"text/plain")]}
        )
        await send({"type": "http.response.body", "body": (b"x" * 3000 if status >= 500 else b"ok")})

    async def start(self) -> None:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", self.port))
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(
            self.app, interface="asgi3", lifespan="off", log_level="warning", access_log=False
        )
        self._server = uvicorn.Server(config)
        self._task = asyncio.create_task(self._server.serve(sockets=[sock]))
        while not self._server.started:
            await asyncio.sleep(0.005)

    async def stop(self) -> None:
        assert self._server is not None and self._task is not None
        self._server.should_exit = True
        await self._task
        self._server = self._task = None

    def verified(self, secret: str) -> list[dict[str, Any]]:
        """Every received request verified with the standardwebhooks library (raises if one fails)."""
        wh = Webhook(secret)
        return [dict(wh.verify(r.body, r.headers)) for r in self.received]


@asynccontextmanager
async def running_receiver() -> AsyncIterator[Receiver]:
    """A started Receiver, stopped on the way out unless the test stopped it already."""
    r = Receiver()
    await r.start()
    try:
        yield r
    finally:
        if r._server is not None:
            await r.stop()
