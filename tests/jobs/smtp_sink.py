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
from pathlib import Path
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
        self.sessions: list[tuple[bool, bytes | None]] = []  # per accepted message: over TLS?, AUTH login

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
            self.sessions.append((session.ssl is not None, getattr(session, "login_data", None)))
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


def self_signed(host: str, directory: Path) -> tuple[Path, Path]:
    """A certificate for the IP address `host` (its own CA) and its key, as PEM files in `directory`."""
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"test relay {host}")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(host))]), critical=False
        )
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "relay.pem", directory / "relay.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return cert_path, key_path


@contextmanager
def starttls_sink(
    directory: Path, login: str, password: str, host: str = "127.0.0.36"
) -> Iterator[tuple[Sink, int, Path]]:
    """(the sink, its port, the CA file to trust) of a relay that requires STARTTLS, then AUTH with
    `login` / `password` (aiosmtpd's own: plain text is refused before TLS)."""
    import ssl

    from aiosmtpd.smtp import AuthResult, LoginPassword

    cert, key = self_signed(host, directory)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)

    def authenticator(server: Any, session: Any, envelope: Any, mechanism: str, data: Any) -> AuthResult:
        ok = (
            isinstance(data, LoginPassword)
            and data.login == login.encode()
            and data.password == password.encode()
        )
        return AuthResult(success=ok, handled=False, auth_data=data if ok else None)  # aiosmtpd answers

    sink = Sink()
    port = free_port(host)
    controller = Controller(
        sink,
        hostname=host,
        port=port,
        tls_context=context,
        require_starttls=True,
        authenticator=authenticator,
        auth_required=True,
        auth_require_tls=True,
    )
    controller.start()
    try:
        yield sink, port, cert
    finally:
        controller.stop()
