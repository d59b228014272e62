"""The read of `alembic_version` (Alembic writes it): which revisions the database is migrated to, for
the readiness check (observability/health.py)."""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession


async def schema_revisions(session: AsyncSession) -> frozenset[str]:
    """The revisions the database is migrated to (its rows of alembic_version)."""
    rows = await session.execute(text("SELECT version_num FROM alembic_version"))
    return frozenset(str(v) for v in rows.scalars())
