"""The real app served by uvicorn on 127.0.0.1 (random port) in a background thread, for browser tests."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import uvicorn

from proxyplane.core.settings import Settings
from proxyplane.platform import Platform
from proxyplane.storage.engine import Database

CHROMIUM = "/usr/bin/chromium"
SERVED: dict[str, str] = {}  # base URL -> its database URL (outbox_link reads the outbox)
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@contextmanager
def serve(database_url: str, home: Path, gateway: bool = False) -> Iterator[str]:
    """Yield the base URL of a running control plane; stop it afterwards. With `gateway`, a gateway node
    runs in the same process as `proxyplane serve` runs it (ports from PROXYPLANE_GATEWAY_*)."""
    from proxyplane.app import create_app

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    base = f"http://127.0.0.1:{port}"
    settings = Settings(
        home=home,
        database_url=database_url,
        secret_key="test-secret-key",  # as tests/conftest.py: a gateway node decrypts every service
        api_port=port,
        public_base_url=base,
    )
    platform = Platform(settings, Database(settings.resolved_database_url()))
    parts: list[object] = []
    if gateway:
        from proxyplane.cli.gateway import gateway_part

        parts.append(gateway_part(platform))
    config = uvicorn.Config(create_app(platform, lifespan_parts=parts), log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("dashboard server did not start")
        time.sleep(0.05)
    SERVED[base] = database_url
    try:
        yield base
    finally:
        SERVED.pop(base, None)
        server.should_exit = True
        thread.join(timeout=20)
        sock.close()


def outbox_link(base: str, email: str, kind: str, path: str) -> str:
    """The newest `kind` message's link to `path` for `email` in the outbox of the server at `base`, read
    with a connection of its own in a thread (the browser test is synchronous)."""
    import asyncio
    import re

    from sqlalchemy import select

    from proxyplane.storage.models.mail import EmailMessage

    async def read() -> str:
        db = Database(Settings(database_url=SERVED[base]).resolved_database_url())
        try:
            async with db.unit_of_work(write=False) as uow:
                return str(
                    (
                        await uow.session.execute(
                            select(EmailMessage.text_body)
                            .where(EmailMessage.to_address == email, EmailMessage.kind == kind)
                            .order_by(EmailMessage.id.desc())
                            .limit(1)
                        )
                    ).scalar_one()
                )
        finally:
            await db.dispose()

    out: list[str] = []
    reader = threading.Thread(target=lambda: out.append(asyncio.run(read())))
    reader.start()
    reader.join()
    found = re.search(rf"{re.escape(base)}{re.escape(path)}\S+", out[0])
    assert found, out[0]
    return found.group(0)
