"""A pool whose connections the store dropped (issue 35: a database restart) on the driver path
(storage/driver.py, transaction.py): the first statement on a dead connection fails as a DBAPIError with
connection_invalidated (so invoke() may run a safe call again), and it marks the pool's older
connections to be replaced: the next unit of work gets a new connection instead of the next dead one.
PostgreSQL only (a real server behind a link the test cuts)."""

from __future__ import annotations

import os

import pytest
from sqlalchemy import literal, select
from sqlalchemy.exc import DBAPIError

from proxyplane.storage.driver import DriverStatement
from proxyplane.storage.engine import Database
from proxyplane.storage.lean_setting import LEAN
from proxyplane.storage.outage import stale_connection
from proxyplane.storage.transaction import begin_with
from tests.faults.support import StoreLink

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not os.environ.get("PROXYPLANE_TEST_DATABASE_URL"), reason="PostgreSQL"),
    pytest.mark.skipif(not LEAN, reason="the driver path itself (PROXYPLANE_LEAN_STORAGE=0: off)"),
]

ONE = DriverStatement(select(literal(1)))


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_a_dead_pooled_connection_fails_once_then_the_pool_reconnects(database_url: str) -> None:
    from proxyplane.storage.repos.idempotency import _CLAIM_WITH_BEGIN

    link = StoreLink.for_url(database_url)
    await link.up()
    db = Database(link.url(database_url))
    try:
        assert await db.warm(4) == 4
        await link.cut()  # the store restarts: every pooled connection is dead
        await link.up()
        values = {"customer_id": 0, "operation": "x", "key": "x", "request_hash": "x", "response": {}}
        with pytest.raises(DBAPIError) as failed:
            async with db.unit_of_work(write=True, lean=True) as uow:
                await begin_with(uow.session, _CLAIM_WITH_BEGIN, {**values, "created_at": None})
        assert failed.value.connection_invalidated and stale_connection(failed.value)
        for _ in range(4):  # the other three pooled connections were replaced too: no second failure
            async with db.unit_of_work(write=False, lean=True) as uow:
                assert await ONE.scalar(uow.session) == 1
    finally:
        await db.dispose()
        await link.cut()
