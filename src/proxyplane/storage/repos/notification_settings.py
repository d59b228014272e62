"""The writer of `notification_settings` rows (issue 31: the row's creation moved out of
domains/mail/prefs.py): one row per customer, made on first use; its choices are set on the loaded row."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.storage.models import NotificationSettings


async def settings_row(session: AsyncSession, customer_id: int) -> NotificationSettings:
    """The customer's row, added to the session (flushed with the unit of work) when there is none yet."""
    row = await session.get(NotificationSettings, customer_id)
    if row is None:
        row = NotificationSettings(customer_id=customer_id)
        session.add(row)
    return row
