"""Apply Alembic migrations: the only way any schema is created (tests included)."""

import asyncio
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from sqlalchemy.ext.asyncio import create_async_engine

MIGRATIONS = Path(__file__).parent / "migrations"


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

            def run(sync_conn: Any) -> None:
                cfg = alembic_config(url)
                cfg.attributes["connection"] = sync_conn
                command.upgrade(cfg, revision)

            await conn.run_sync(run)
    finally:
        await engine.dispose()


def upgrade_sync(url: str) -> None:
    asyncio.run(upgrade(url))
