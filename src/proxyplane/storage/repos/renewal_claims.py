"""The writer of `renewal_claims` (one automatic renewal per service and term end). Nothing here commits."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.storage.models.billing import RenewalClaim


async def claim(
    session: AsyncSession, service_id: uuid.UUID, term_end: datetime, now: datetime
) -> RenewalClaim:
    """The claim of the term ending `term_end`, flushed; raises IntegrityError when another worker holds
    it (the unit of work is then spent: the caller ends it)."""
    row = RenewalClaim(service_id=service_id, term_end=term_end, charged_cents=0, created_at=now)
    session.add(row)
    await session.flush()
    return row

