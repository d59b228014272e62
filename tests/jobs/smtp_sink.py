"""A real SMTP server on loopback for the mail tests (aiosmtpd in its own thread): it keeps what it
accepts and refuses recipients it is told to refuse with the given answer."""

from __future__ import annotations

import asyncio
import email
import email.policy
import re
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from email.message import EmailMessage
from typing import Any

from aiosmtpd.controller import Controller


def free_port(host: str) -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


class Sink:
    def __init__(self) -> None:
        self.messages: list[EmailMessage] = []
        self.refuse: dict[str, str] = {}  # address -> the server's answer, e.g. "550 5.1.1 no such user"
        self.lock = threading.Lock()

    async def handle_RCPT(  # noqa: N802 (aiosmtpd's hook name)
        self, server: Any, session: Any, envelope: Any, address: str, rcpt_options: list[str]
    ) -> str:
        if address in self.refuse:
            return self.refuse[address]
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:  # noqa: N802
        msg = email.message_from_bytes(envelope.content, policy=email.policy.default)
        assert isinstance(msg, EmailMessage)
        with self.lock:
            self.messages.append(msg)
        return "250 2.0.0 queued"

    def to(self, address: str) -> list[EmailMessage]:
        with self.lock:
            return [m for m in self.messages if m["To"] == address]

    def wait_for(self, address: str, count: int = 1, timeout: float = 15.0) -> list[EmailMessage]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if len(self.to(address)) >= count:
                return self.to(address)
            time.sleep(0.05)
        return self.to(address)

    async def await_for(self, address: str, count: int = 1, timeout: float = 15.0) -> list[EmailMessage]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and len(self.to(address)) < count:
            await asyncio.sleep(0.05)
        return self.to(address)


@contextmanager
def smtp_sink(host: str = "127.0.0.34", port: int | None = None) -> Iterator[tuple[Sink, str]]:
    """(the sink, its smtp:// URL) while the server runs."""
    sink = Sink()
    port = port or free_port(host)
    controller = Controller(sink, hostname=host, port=port)
    controller.start()
    try:
        yield sink, f"smtp://{host}:{port}"
    finally:
        controller.stop()


def parts(msg: EmailMessage) -> tuple[str, str]:
    """(text, html) of a multipart/alternative message."""
    text = msg.get_body(preferencelist=("plain",))
    html = msg.get_body(preferencelist=("html",))
    assert text is not None and html is not None
    return str(text.get_content()), str(html.get_content())


def link(msg: EmailMessage, path: str) -> str:
    """The one link to `path` in the message: the same in its text and HTML parts."""
    text, html = parts(msg)
    found = set(re.findall(rf"https?://[^\s\"<>]+{re.escape(path)}[^\s\"<>]*", text))
    assert len(found) == 1, found
    url = found.pop()
    assert url in html
    return url
