"""SQLite statements on the event loop's thread (storage/sqlite_driver.py): a writing unit of work makes
two thread jobs (BEGIN IMMEDIATE, COMMIT) whatever its statement count; a lock wait (another process
holding the write lock) and known-long statements stay on the connection's thread, so the loop keeps
running. These tests use a SQLite file of their own, whichever database the suite runs on."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError

from proxyplane.storage import sqlite_driver
from proxyplane.storage.driver import DriverStatement
from proxyplane.storage.engine import Database, UnitOfWork
from proxyplane.storage.lean_setting import LEAN

pytestmark = pytest.mark.anyio
LEAN_ONLY = pytest.mark.skipif(not LEAN, reason="the lean form itself (PROXYPLANE_LEAN_STORAGE=0: off)")

_INSERT = DriverStatement(text("INSERT INTO t (v) VALUES (:v) RETURNING id"))


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    database = Database(f"sqlite+aiosqlite:///{tmp_path / 'driver.db'}")
    async with database.unit_of_work() as uow:
        await uow.session.execute(text("CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER NOT NULL UNIQUE)"))
        await uow.commit()
    yield database
    await database.dispose()


async def _adapter(uow: UnitOfWork) -> sqlite_driver.Connection:
    conn = await uow.session.connection()
    adapted: Any = (await conn.get_raw_connection()).dbapi_connection
    assert isinstance(adapted, sqlite_driver.Connection)
    return adapted


def _jobs(adapted: sqlite_driver.Connection) -> int:
    return adapted._jobs.put


class _Ticker:
    """Counts event-loop iterations while running: a blocked loop does not tick."""

    def __init__(self) -> None:
        self.ticks = 0
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        while True:
            self.ticks += 1
            await asyncio.sleep(0.01)

    def __enter__(self) -> _Ticker:
        self._task = asyncio.get_running_loop().create_task(self._run())
        return self

    def __exit__(self, *_: object) -> None:
        assert self._task is not None
        self._task.cancel()


@LEAN_ONLY
async def test_a_writing_unit_of_work_runs_on_the_loop_from_begin_to_commit(db: Database) -> None:
    async with db.unit_of_work() as uow:
        first = await _adapter(uow)
        await uow.commit()
    jobs = _jobs(first)
    async with db.unit_of_work() as uow:
        adapted = await _adapter(uow)
        assert adapted is first  # the pooled connection again
        before = _jobs(adapted)
        assert before == jobs  # BEGIN IMMEDIATE got the lock at once, on the loop (and no pool reset)
        for v in range(10):
            assert await _INSERT.scalar(uow.session, {"v": v}) is not None
            await uow.session.execute(text("UPDATE t SET v = v + 100 WHERE v = :v"), {"v": v})
        assert (await uow.session.execute(text("SELECT count(*) FROM t"))).scalar() == 10
        assert _jobs(adapted) == before  # 21 statements, none on the thread
        await uow.commit()
        assert _jobs(adapted) == before  # COMMIT: WAL mode, synchronous NORMAL, its checkpoints elsewhere
    async with db.unit_of_work(write=False) as uow:
        assert (await uow.session.execute(text("SELECT sum(v) FROM t"))).scalar() == sum(range(100, 110))


@LEAN_ONLY
async def test_a_reader_reads_on_the_loop_and_writes_on_the_thread(db: Database) -> None:
    async with db.unit_of_work(write=False) as uow:
        adapted = await _adapter(uow)
        before = _jobs(adapted)  # BEGIN (deferred) ran on the loop
        for _ in range(5):  # the first takes the WAL snapshot (with a zero busy timeout: it got it)
            await uow.session.execute(text("SELECT count(*) FROM t"))
        assert _jobs(adapted) == before
    assert _jobs(adapted) == before  # its end (the pool's rollback) on the loop
    async with db.unit_of_work(write=False) as uow:
        assert await _adapter(uow) is adapted
        await uow.session.execute(text("SELECT count(*) FROM t"))
        await uow.session.execute(text("INSERT INTO t (v) VALUES (7)"))  # a write may wait: the thread
        assert _jobs(adapted) == before + 1
        await uow.commit()  # it wrote: its COMMIT on the thread
        assert _jobs(adapted) == before + 2


async def test_waiting_for_another_writer_does_not_block_the_loop(db: Database, tmp_path: Path) -> None:
    other = sqlite3.connect(tmp_path / "driver.db", isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")  # another process holds the write lock
    release = threading.Timer(0.3, other.execute, args=("COMMIT",))
    release.start()
    try:
        with _Ticker() as ticker:
            async with db.unit_of_work() as uow:  # BEGIN IMMEDIATE waits on the busy timeout
                await _INSERT.scalar(uow.session, {"v": 1})
                await uow.commit()
            assert ticker.ticks >= 10  # the loop ran while the lock was waited for
    finally:
        release.join()
        other.close()


@LEAN_ONLY
async def test_long_statements_go_to_the_thread(db: Database) -> None:
    many = [{"v": v} for v in range(sqlite_driver.MANY_ON_LOOP + 1)]
    count = text(
        "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < :n) SELECT count(*) FROM c"
    )
    async with db.unit_of_work() as uow:
        adapted = await _adapter(uow)
        before = _jobs(adapted)
        await DriverStatement(text("INSERT INTO t (v) VALUES (:v)")).many(uow.session, many)
        assert _jobs(adapted) == before + 1  # more rows than MANY_ON_LOOP: on the thread
        big, small = 300_000, 10
        assert (await uow.session.execute(count, {"n": big})).scalar() == big  # slow, on the loop once
        assert _jobs(adapted) == before + 1
        assert (await uow.session.execute(count, {"n": big})).scalar() == big  # from then on on the thread
        assert _jobs(adapted) == before + 2
        assert (await uow.session.execute(count, {"n": small})).scalar() == small  # smaller: on the loop
        assert _jobs(adapted) == before + 2
        await uow.commit()


@LEAN_ONLY
async def test_a_statement_slow_once_comes_back_to_the_loop_when_fast_on_the_thread(db: Database) -> None:
    """One slow run (a collector pass, a page fault) must not send an ordinary statement to the thread for
    good: it runs there once, fast, and is back on the loop from then on."""
    insert = "INSERT INTO t (v) VALUES (?) RETURNING id"
    sqlite_driver._SlowStatements.note(insert, (1000,), sqlite_driver.SLOW_SECONDS * 2)  # as if slow once
    try:
        async with db.unit_of_work() as uow:
            adapted = await _adapter(uow)
            before = _jobs(adapted)
            await _INSERT.scalar(uow.session, {"v": 1001})
            assert _jobs(adapted) == before + 1  # marked: on the thread, where it runs fast
            await _INSERT.scalar(uow.session, {"v": 1002})
            await _INSERT.scalar(uow.session, {"v": 1003})
            assert _jobs(adapted) == before + 1  # back on the loop
            await uow.commit()
    finally:
        sqlite_driver._SlowStatements.sizes.pop(insert, None)


async def test_an_error_on_the_loop_is_sqlalchemys_and_the_transaction_goes_on(db: Database) -> None:
    async with db.unit_of_work() as uow:
        await _INSERT.scalar(uow.session, {"v": 1})
        await uow.session.execute(text("SAVEPOINT s"))
        with pytest.raises(IntegrityError):
            await uow.session.execute(text("INSERT INTO t (v) VALUES (1)"))
        with pytest.raises(IntegrityError):
            await _INSERT.scalar(uow.session, {"v": 1})
        await uow.session.execute(text("ROLLBACK TO SAVEPOINT s"))
        await _INSERT.scalar(uow.session, {"v": 2})
        await uow.commit()
    async with db.unit_of_work(write=False) as uow:
        assert (await uow.session.execute(text("SELECT v FROM t ORDER BY v"))).scalars().all() == [1, 2]


async def test_concurrent_writers_on_one_loop_keep_every_increment(db: Database) -> None:
    async with db.unit_of_work() as uow:
        await uow.session.execute(text("INSERT INTO t (id, v) VALUES (1, 0)"))
        await uow.commit()

    async def bump() -> None:
        for _ in range(5):
            async with db.unit_of_work() as uow:
                v = (await uow.session.execute(text("SELECT v FROM t WHERE id = 1"))).scalar_one()
                await asyncio.sleep(0)  # another writer's turn, if the write queue let it in
                await uow.session.execute(text("UPDATE t SET v = :v WHERE id = 1"), {"v": v + 1})
                await uow.commit()

    await asyncio.gather(*(bump() for _ in range(10)))
    async with db.unit_of_work(write=False) as uow:
        assert (await uow.session.execute(text("SELECT v FROM t WHERE id = 1"))).scalar() == 50


@LEAN_ONLY
async def test_checkpoints_run_on_the_thread_and_big_commits_too(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite_driver, "CHECKPOINT_EVERY", 3)
    monkeypatch.setattr(sqlite_driver._Checkpoints, "commits", 0)
    for v in range(3):
        async with db.unit_of_work() as uow:
            adapted = await _adapter(uow)
            before = _jobs(adapted)
            await _INSERT.scalar(uow.session, {"v": v})
            await uow.commit()
    assert _jobs(adapted) == before + 1  # the third commit: a PASSIVE checkpoint on the thread
    assert sqlite_driver._Checkpoints.commits == 0
    async with db.unit_of_work() as uow:
        adapted = await _adapter(uow)
        wal = await uow.session.execute(text("PRAGMA wal_autocheckpoint"))
        assert wal.scalar() == 0  # SQLite's own checkpoint (inside COMMIT) is off on this connection
        rows = [{"v": v} for v in range(100, 100 + sqlite_driver.COMMIT_ON_LOOP_CHANGES + 1)]
        await DriverStatement(text("INSERT INTO t (v) VALUES (:v)")).many(uow.session, rows)
        before = _jobs(adapted)
        await uow.commit()
        assert _jobs(adapted) == before + 1  # more rows changed than COMMIT_ON_LOOP_CHANGES: on the thread
    async with db.unit_of_work(write=False) as uow:
        assert (await uow.session.execute(text("SELECT count(*) FROM t"))).scalar() == 3 + len(rows)


@pytest.mark.parametrize("loop_closing", [False, True], ids=["left", "cancelled"])
async def test_a_cancel_while_the_thread_runs_a_statement_leaves_no_task_waiting(
    db: Database, tmp_path: Path, loop_closing: bool
) -> None:
    """A cancel while a statement runs on the connection's thread (here BEGIN IMMEDIATE waiting for
    another process's write lock) makes SQLAlchemy terminate the connection: a graceful close in a task of
    its own, and a forced stop as the cancel goes on. That task ends once the thread is done, by itself or
    cancelled meanwhile (an event loop's close cancels every task left and waits for them: one waiting for
    ever held the SQLite test run for an hour)."""
    async with db.unit_of_work(write=False) as uow:  # the pooled connection the writer below gets
        adapted: Any = (await (await uow.session.connection()).get_raw_connection()).dbapi_connection
    assert isinstance(adapted, sqlite_driver.ClosedOnce)  # the plain driver too (lean forms off)
    jobs = getattr(adapted, "_jobs", None)
    if jobs is None:  # plain: count the thread's jobs from here on as the lean driver does
        jobs = adapted._connection._tx = sqlite_driver._CountingQueue(adapted._connection._tx)
    other = sqlite3.connect(tmp_path / "driver.db", isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")
    before = asyncio.all_tasks()
    try:
        with anyio.CancelScope() as scope:

            async def cancel_once_on_the_thread() -> None:
                with anyio.fail_after(10):
                    while jobs.idle():
                        await asyncio.sleep(0.005)
                scope.cancel()  # the BEGIN IMMEDIATE is the thread's job now

            async with anyio.create_task_group() as group:
                group.start_soon(cancel_once_on_the_thread)
                async with db.unit_of_work():
                    pytest.fail("the write lock is another process's")
        assert scope.cancelled_caught
        left = asyncio.all_tasks() - before - {asyncio.current_task()}
        assert left  # the graceful close
        if loop_closing:
            for task in left:
                task.cancel()
    finally:
        other.execute("COMMIT")
        other.close()
    done, pending = await asyncio.wait(left, timeout=10)
    assert not pending, pending
    adapted._connection._thread.join(10)
    assert not adapted._connection._thread.is_alive()  # the connection closed, its thread ended
    async with db.unit_of_work() as uow:  # a new connection
        assert await _INSERT.scalar(uow.session, {"v": 1}) is not None
        await uow.commit()
