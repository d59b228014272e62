"""A PostgreSQL database of a bench's own, on the server of the suite's database: benches drop the schema
they are given, so they never get the suite's."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine


async def _database(url: str, name: str, create: bool) -> None:
    admin = create_async_engine(url.rsplit("/", 1)[0] + "/postgres", isolation_level="AUTOCOMMIT")
    try:
        async with admin.connect() as conn:
            sql = f'CREATE DATABASE "{name}"' if create else f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'
            await conn.execute(text(sql))
    finally:
        await admin.dispose()


@asynccontextmanager
async def own_database(suite_url: str) -> AsyncIterator[str]:
    """A new empty database beside `suite_url`'s (dropped on exit); yields its URL."""
    name = f"pp_bench_{uuid.uuid4().hex[:8]}"
    await _database(suite_url, name, create=True)
    try:
        yield suite_url.rsplit("/", 1)[0] + "/" + name
    finally:
        await _database(suite_url, name, create=False)
