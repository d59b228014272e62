"""PROXYPLANE_SMTP_URL and one SMTP connection (aiosmtplib) that sends outbox rows as MIME messages.

    smtp://host[:25]                   plain (no TLS), e.g. a local relay
    smtp+starttls://user:pass@host[:587]  STARTTLS required before AUTH
    smtps://user:pass@host[:465]       implicit TLS

User and password are percent-decoded. `?timeout=` (seconds) overrides PROXYPLANE_SMTP_TIMEOUT_SECONDS;
`?ca=/path/ca.pem` trusts that CA for the server's certificate (a private relay) besides the system's.
The certificate is always verified, host name included."""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from email.message import EmailMessage as MimeMessage
from email.utils import formatdate
from urllib.parse import parse_qs, unquote, urlsplit

import aiosmtplib

from proxyplane.storage.models.mail import EmailMessage

SCHEMES = {"smtp": (25, False, False), "smtp+starttls": (587, False, True), "smtps": (465, True, False)}


@dataclass(frozen=True)
class SmtpTarget:
    host: str
    port: int
    implicit_tls: bool
    starttls: bool
    username: str | None
    password: str | None
    timeout: float
    ca_file: str | None = None


def parse_smtp_url(url: str, timeout: float = 30.0) -> SmtpTarget:
    parts = urlsplit(url)
    if parts.scheme not in SCHEMES:
        known = ", ".join(SCHEMES)
        raise ValueError(f"PROXYPLANE_SMTP_URL: scheme must be one of {known}, not {parts.scheme!r}")
    if not parts.hostname:
        raise ValueError("PROXYPLANE_SMTP_URL: no host")
    port, implicit, starttls = SCHEMES[parts.scheme]
    query = parse_qs(parts.query)
    return SmtpTarget(
        host=parts.hostname,
        port=parts.port or port,
        implicit_tls=implicit,
        starttls=starttls,
        username=unquote(parts.username) if parts.username else None,
        password=unquote(parts.password) if parts.password else None,
        timeout=float(query["timeout"][0]) if "timeout" in query else timeout,
        ca_file=query["ca"][0] if "ca" in query else None,
    )


def mime(row: EmailMessage, sender: str) -> MimeMessage:
    """The row as a multipart/alternative message: text first, then HTML."""
    msg = MimeMessage()
    msg["From"] = sender
    msg["To"] = row.to_address
    msg["Subject"] = row.subject
    msg["Date"] = formatdate(row.created_at.timestamp(), usegmt=True)
    msg["Message-ID"] = row.message_id
    for name, value in (row.headers or {}).items():
        msg[name] = value
    msg.set_content(row.text_body)
    msg.add_alternative(row.html_body, subtype="html")
    return msg


@dataclass
class Sent:
    ok: bool
    permanent: bool = False  # the server refused it (5xx): retrying sends nothing
    answer: str = ""  # the server's answer, or the connection error


class SmtpConnection:
    """Connects on first use; a broken connection is dropped and the next message opens a new one."""

    def __init__(self, target: SmtpTarget) -> None:
        self.target = target
        self.client: aiosmtplib.SMTP | None = None

    async def _connected(self) -> aiosmtplib.SMTP:
        if self.client is None or not self.client.is_connected:
            t = self.target
            client = aiosmtplib.SMTP(
                hostname=t.host,
                port=t.port,
                use_tls=t.implicit_tls,
                start_tls=t.starttls,
                username=t.username,
                password=t.password,
                timeout=t.timeout,
                cert_bundle=t.ca_file,
            )
            await client.connect()
            self.client = client
        return self.client

    async def send(self, msg: MimeMessage) -> Sent:
        try:
            client = await self._connected()
            refused, answer = await client.send_message(msg)
        except ssl.SSLError as exc:  # the relay's certificate (a ValueError too): the relay's fault, retried
            await self.close()
            return Sent(ok=False, answer=f"{type(exc).__name__}: {exc}"[:1000])
        except ValueError as exc:  # an address aiosmtplib will not put on the wire: never sendable
            return Sent(ok=False, permanent=True, answer=f"not sent: {exc}"[:1000])
        except aiosmtplib.SMTPAuthenticationError as exc:  # the relay's credentials, not this message
            await self.close()
            return Sent(ok=False, answer=f"{exc.code} {exc.message}"[:1000])
        except aiosmtplib.SMTPRecipientsRefused as exc:
            first = exc.recipients[0] if exc.recipients else None
            code = first.code if first is not None else 550
            text = f"{code} {first.message}" if first is not None else str(exc)
            return Sent(ok=False, permanent=code >= 500, answer=text[:1000])
        except aiosmtplib.SMTPResponseException as exc:
            await self.close()
            return Sent(ok=False, permanent=exc.code >= 500, answer=f"{exc.code} {exc.message}"[:1000])
        except (aiosmtplib.SMTPException, OSError) as exc:
            await self.close()
            return Sent(ok=False, answer=f"{type(exc).__name__}: {exc}"[:1000])
        if refused:
            code, response = next(iter(refused.values()))
            return Sent(ok=False, permanent=code >= 500, answer=f"{code} {response}"[:1000])
        return Sent(ok=True, answer=str(answer)[:1000])

    async def close(self) -> None:
        client, self.client = self.client, None
        if client is not None and client.is_connected:
            try:
                await client.quit()
            except (aiosmtplib.SMTPException, OSError):
                client.close()
