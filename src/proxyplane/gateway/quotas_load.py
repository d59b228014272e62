"""Reading service quotas (issue 32) from the store for the access table: one select per load (all rows,
or those of the reloaded services), like subusers_load.py. A quota row of a period that ended (a "month"
quota whose reset the usage flush has not run yet) loads as the new period's: nothing used."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.core.clock import utcnow
from proxyplane.storage.models.quotas import ServiceQuota

from .quotas import QuotaEntry

IN_CHUNK = 500


async def load_quotas(session: AsyncSession, ids: Sequence[uuid.UUID] | None) -> dict[str, QuotaEntry]:
    """{str(service_id): its quota} of every metered service (``ids`` None) or of ``ids``."""
    q = ServiceQuota
    query = select(
        q.service_id,
        q.period,
        q.quota_bytes,
        q.extra_bytes,
        q.quota_requests,
        q.used_bytes,
        q.used_requests,
        q.limit_reached,
        q.resets_at,
    )
    rows = []
    if ids is None:
        rows = list((await session.execute(query)).all())
    else:
        id_list = list(ids)
        for i in range(0, len(id_list), IN_CHUNK):
            chunk = id_list[i : i + IN_CHUNK]
            rows.extend((await session.execute(query.where(q.service_id.in_(chunk)))).all())
    now = utcnow()
    out: dict[str, QuotaEntry] = {}
    for sid, period, qb, extra, qr, used_b, used_r, reached, resets_at in rows:
        if period == "month" and resets_at is not None and resets_at <= now:
            used_b = used_r = extra = 0
            reached = False
        key = str(sid)
        out[key] = QuotaEntry(
            key,
            None if qb is None else int(qb) + int(extra or 0),
            None if qr is None else int(qr),
            int(used_b or 0),
            int(used_r or 0),
            bool(reached),
        )
    return out
