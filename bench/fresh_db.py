"""An emptied, migrated bench database: the set-up the bench scripts share.

PostgreSQL: the public schema is DROPPED and created again; SQLite: the file is removed. Then the Alembic
migrations run to the head. Only ever point it at a database of your own (a *_bench one).
"""

from __future__ import annotations

import os

from sqlalchemy import text

from proxyplane.storage.engine import Database
from proxyplane.storage.migrate import upgrade


async def fresh_database(url: str) -> None:
    """Empty the database at `url` (a resolved SQLAlchemy async URL) and migrate it to the head."""
    if url.startswith("postgresql"):
        db = Database(url)
        async with db.engine.begin() as conn:
            await conn.execute(text("DROP SCHEMA IF EXISTS public CASCADE"))
            await conn.execute(text("CREATE SCHEMA public"))
        await db.dispose()
    else:
        path = url.split("///", 1)[1]
        if os.path.exists(path):
            os.remove(path)
    await upgrade(url)
