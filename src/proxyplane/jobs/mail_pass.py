"""The notification pass, owning its transaction: the events of notified types since the cursor become
queued messages (domains/mail/passes.py), and the cursor moves on; the expiry reminders run from the
renewal job (jobs/renewals.py). Several workers may run it at once: dedupe keys queue each message once."""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import select

from proxyplane.core.clock import utcnow
from proxyplane.domains.mail import notify, passes
from proxyplane.platform import Platform
from proxyplane.storage.models import Event
from proxyplane.storage.repos import mail as repo

CURSOR = "events"
BATCH = 500


def links(platform: Platform) -> notify.Links:
    return notify.Links(platform.settings.base_url(), platform.secret_key)


async def notify_pass(platform: Platform, now: datetime | None = None, limit: int = BATCH) -> int:
    """Queue the messages of events created up to `now` minus the lag (a change that wrote its event but
    has not committed yet is read by a later pass); returns how many messages were queued."""
    upto = (now or utcnow()) - timedelta(seconds=platform.settings.mail_notify_lag_seconds)
    types = notify.notified_types()
    async with platform.db.unit_of_work() as uow:
        session = uow.session
        start = await repo.cursor(session, CURSOR) or upto
        if start > upto:
            return 0
        events = (
            (
                await session.execute(
                    select(Event)
                    .where(Event.type.in_(types), Event.created_at >= start, Event.created_at <= upto)
                    .order_by(Event.created_at)
                    .limit(limit)
                )
            )
            .scalars()
            .all()
        )
        queued = await passes.queue_events(session, events, links(platform), platform.settings.mail_from)
        # all read: up to `upto`; a full batch: up to its last event (read again next time: >=)
        await repo.move_cursor(session, CURSOR, events[-1].created_at if len(events) == limit else upto)
        await uow.commit()
    return queued


async def remind_pass(platform: Platform, now: datetime | None = None) -> int:
    """The expiry reminders due at `now` (the renewal job's clock)."""
    async with platform.db.unit_of_work() as uow:
        queued = await passes.remind_expiring(
            uow.session, now or utcnow(), links(platform), platform.settings.mail_from
        )
        await uow.commit()
    return queued
