"""PostgreSQL pool without a ping per checkout: a connection that died while idle in the pool longer
than IDLE_PING_SECONDS is found by the checkout ping and replaced; the unit of work never sees it."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from proxyplane.storage import engine as engine_module
from proxyplane.storage.engine import Database

pytestmark = pytest.mark.anyio


async def test_an_idle_dead_connection_is_replaced_at_checkout(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not database_url.startswith("postgresql"):
        pytest.skip("PostgreSQL pool only (SQLite has no server connection to lose)")
    db = Database(database_url, pool_size=1, max_overflow=0)
    killer = Database(database_url, pool_size=1, max_overflow=0)
    try:
        assert db.engine.pool._pre_ping is False  # type: ignore[attr-defined]
        async with db.unit_of_work(write=False) as uow:
            pid = int(await uow.session.scalar(text("SELECT pg_backend_pid()")) or 0)
        async with killer.unit_of_work() as uow:  # the server ends the idle pooled connection
            await uow.session.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
            await uow.commit()
        monkeypatch.setattr(engine_module, "IDLE_PING_SECONDS", 0.0)
        async with db.unit_of_work(write=False) as uow:
            again = int(await uow.session.scalar(text("SELECT pg_backend_pid()")) or 0)
        assert again != pid
    finally:
        await db.dispose()
        await killer.dispose()
