"""The one writer of `email_outbox` and `mail_cursors` (issue 34): queue a message (once per dedupe key),
claim due messages for a sender, record the result; the notification pass's cursor."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import and_, or_, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.core.clock import utcnow
from proxyplane.storage.models.mail import EmailMessage, MailCursor
from proxyplane.storage.rowcount import rowcount


def _insert(session: AsyncSession) -> Any:
    return sqlite_insert if session.get_bind().dialect.name == "sqlite" else pg_insert


def _postgres(session: AsyncSession) -> bool:
    return session.get_bind().dialect.name != "sqlite"


async def queue(session: AsyncSession, values: dict[str, Any]) -> int | None:
    """Insert one pending message in the caller's transaction; its id, or None when a message with the
    same `dedupe_key` exists already (then nothing is written)."""
    now = utcnow()
    row = {"status": "pending", "attempts": 0, "next_attempt_at": now, "created_at": now, **values}
    stmt = _insert(session)(EmailMessage).values(row).on_conflict_do_nothing().returning(EmailMessage.id)
    found = (await session.execute(stmt)).scalar_one_or_none()
    return int(found) if found is not None else None


async def claim(session: AsyncSession, worker: str, now: datetime, until: datetime, limit: int) -> list[int]:
    """Lease due messages to `worker`: pending and due, or sending with an expired lease (its sender died
    before writing the result). PostgreSQL skips rows another sender holds (FOR UPDATE SKIP LOCKED);
    SQLite's single writer makes the UPDATE atomic."""
    m = EmailMessage
    due = or_(
        and_(m.status == "pending", m.next_attempt_at <= now),
        and_(m.status == "sending", m.locked_until < now),
    )
    picked = select(m.id).where(due).order_by(m.id).limit(limit)
    if _postgres(session):
        picked = picked.with_for_update(skip_locked=True)
    ids = list((await session.execute(picked)).scalars())
    if not ids:
        return []
    stmt = (
        update(m)
        .where(m.id.in_(ids), due)
        .values(status="sending", locked_by=worker, locked_until=until, attempts=m.attempts + 1)
        .returning(m.id)
        .execution_options(synchronize_session=False)
    )
    return sorted(int(i) for i in (await session.execute(stmt)).scalars())


async def finish(session: AsyncSession, message_id: int, worker: str, values: dict[str, Any]) -> bool:
    """Write a send's result if the lease is still `worker`'s; False when it was lost."""
    m = EmailMessage
    moved = await session.execute(
        update(m)
        .where(m.id == message_id, m.status == "sending", m.locked_by == worker)
        .values(locked_by=None, locked_until=None, **values)
        .execution_options(synchronize_session=False)
    )
    return rowcount(moved) == 1


async def retry_now(session: AsyncSession, message_ids: Sequence[int]) -> int:
    """The operator's retry: failed messages back to pending, due now."""
    m = EmailMessage
    moved = await session.execute(
        update(m)
        .where(m.id.in_(list(message_ids)), m.status == "failed")
        .values(status="pending", next_attempt_at=utcnow(), last_error=None)
        .execution_options(synchronize_session=False)
    )
    return rowcount(moved)


async def cursor(session: AsyncSession, name: str) -> datetime | None:
    row = await session.get(MailCursor, name)
    return row.position if row is not None else None


async def move_cursor(session: AsyncSession, name: str, position: datetime) -> None:
    """Set the cursor (never backwards: of two passes at once the further one wins)."""
    stmt = _insert(session)(MailCursor).values(name=name, position=position)
    stmt = stmt.on_conflict_do_update(
        index_elements=["name"],
        set_={"position": position},
        where=MailCursor.position < position,
    )
    await session.execute(stmt)
