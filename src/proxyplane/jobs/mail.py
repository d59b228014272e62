"""The mail job: send the outbox through SMTP, with retries and exponential backoff.

Claim (one short transaction: due rows -> `sending`, leased to this worker, attempts + 1), send each
over one SMTP connection, then write each result in its own transaction only if the lease is still ours:
`sent` (with the server's answer), `pending` again after a backoff (connection down, 4xx), or `failed`
(5xx refusal, or out of attempts) with the server's answer for the operator. A row is never claimed by two
workers and never sent again once marked sent. With no PROXYPLANE_SMTP_URL nothing is sent: messages stay
`pending` in the outbox (`proxyplane admin outbox`). The notification pass runs in the same loop."""

from __future__ import annotations

import asyncio
import logging
import os
import random
import socket
import uuid
from datetime import timedelta
from typing import Any

from sqlalchemy import select

from proxyplane.core.clock import utcnow
from proxyplane.core.settings import Settings
from proxyplane.jobs.mail_pass import notify_pass
from proxyplane.jobs.smtp import SmtpConnection, mime, parse_smtp_url
from proxyplane.platform import Platform
from proxyplane.storage.models.mail import EmailMessage
from proxyplane.storage.repos import mail as repo

log = logging.getLogger("proxyplane.mail")


def backoff(settings: Settings, attempts: int) -> float:
    """Seconds before the next try: exponential from mail_retry_base_seconds, capped, +-20 % jitter."""
    base = settings.mail_retry_base_seconds * (2.0 ** max(0, attempts - 1))
    return min(settings.mail_retry_max_seconds, base) * random.uniform(0.8, 1.2)


class MailWorker:
    def __init__(self, platform: Platform, name: str | None = None) -> None:
        self.platform = platform
        self.settings = platform.settings
        self.name = name or f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        url = self.settings.smtp_url
        target = parse_smtp_url(url, self.settings.smtp_timeout_seconds) if url else None
        self.connection = SmtpConnection(target) if target is not None else None

    async def run_once(self, limit: int = 20) -> int:
        """Claim due messages and send them; returns how many were attempted (0 without SMTP)."""
        if self.connection is None:
            return 0
        now = utcnow()
        lease = timedelta(seconds=2 * self.connection.target.timeout + 30)
        async with self.platform.db.unit_of_work() as uow:
            ids = await repo.claim(uow.session, self.name, now, now + lease, limit)
            await uow.commit()
        for message_id in ids:
            await self.attempt(message_id)
        if ids:
            await self.connection.close()  # one connection per batch
        return len(ids)

    async def attempt(self, message_id: int) -> None:
        assert self.connection is not None
        async with self.platform.db.unit_of_work(write=False) as uow:
            row = (
                await uow.session.execute(select(EmailMessage).where(EmailMessage.id == message_id))
            ).scalar_one_or_none()
        if row is None:
            return
        sent = await self.connection.send(mime(row, self.settings.mail_from))
        now = utcnow()
        values: dict[str, Any] = {"last_error": None if sent.ok else sent.answer}
        if sent.ok:
            values.update(status="sent", sent_at=now)
        elif sent.permanent or row.attempts >= self.settings.mail_max_attempts:
            values.update(status="failed")
        else:
            delay = backoff(self.settings, row.attempts)
            values.update(status="pending", next_attempt_at=now + timedelta(seconds=delay))
        async with self.platform.db.unit_of_work() as uow:
            kept = await repo.finish(uow.session, message_id, self.name, values)
            await uow.commit()
        if not kept:
            log.warning("mail %s: lease lost before its result was written", message_id)
        elif not sent.ok:
            status = values["status"]
            log.info("mail %s to %s not sent (%s): %s", message_id, row.to_address, status, sent.answer)

    async def run_forever(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            done = 0
            try:
                await notify_pass(self.platform)
                done = await self.run_once()
            except Exception:  # keep the job alive: unsent rows stay pending, leases expire
                log.exception("mail pass failed")
            if done == 0:
                try:
                    await asyncio.wait_for(stop.wait(), self.settings.worker_poll_seconds)
                except TimeoutError:
                    pass

    async def close(self) -> None:
        if self.connection is not None:
            await self.connection.close()
