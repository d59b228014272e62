"""Apply Alembic migrations: the only way any schema is created (tests included)."""

import asyncio
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession, create_async_engine

MIGRATIONS = Path(__file__).parent / "migrations"

# PostgreSQL advisory-lock keys of the start-up steps that several processes may run at the same moment
# (N `proxyplane serve`/`gateway` on one empty database): the second waits for the first, then finds the
# work done. Transaction-scoped: released by the commit or rollback, never left behind by a dead process.
MIGRATE_LOCK = 0x70705F6D696772  # "pp_migr"
SEED_LOCK = 0x70705F73656564  # "pp_seed"


async def startup_lock(conn: AsyncConnection | AsyncSession, key: int) -> None:
    """Hold the start-up lock `key` until this transaction ends (PostgreSQL only; on SQLite the processes
    of one machine share a file, and the seed's writing unit of work already begins IMMEDIATE)."""
    dialect = conn.dialect if isinstance(conn, AsyncConnection) else conn.get_bind().dialect
    if dialect.name == "postgresql":
        await conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": key})


def alembic_config(url: str) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return cfg


async def upgrade(url: str, revision: str = "heads") -> None:
    """Upgrade the database at `url` to the newest schema (all heads)."""
    if url.startswith("sqlite"):
        path = url.split("///", 1)[-1]
        if path and path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
    engine = create_async_engine(url)
    try:
        async with engine.begin() as conn:
            await startup_lock(conn, MIGRATE_LOCK)  # alembic runs in this transaction: one migrator at once

            def run(sync_conn: Any) -> None:
                cfg = alembic_config(url)
                cfg.attributes["connection"] = sync_conn
                command.upgrade(cfg, revision)

            await conn.run_sync(run)
    finally:
        await engine.dispose()


def upgrade_sync(url: str) -> None:
    asyncio.run(upgrade(url))
