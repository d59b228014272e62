"""Database engine and the unit of work: the only place that commits."""

from __future__ import annotations

import asyncio
import weakref
from types import TracebackType
from typing import Any

from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker, create_async_engine


class Database:
    def __init__(self, url: str, **engine_kwargs: Any) -> None:
        self.url = url
        self.is_sqlite = url.startswith("sqlite")
        if self.is_sqlite:
            engine_kwargs.setdefault("connect_args", {"timeout": 30})
        else:
            engine_kwargs.setdefault("pool_size", 10)
            engine_kwargs.setdefault("max_overflow", 20)
            engine_kwargs.setdefault("pool_pre_ping", True)
        self.engine: AsyncEngine = create_async_engine(url, **engine_kwargs)
        if self.is_sqlite:
            _sqlite_setup(self.engine)
        self.sessions = async_sessionmaker(self.engine, expire_on_commit=False, autoflush=True)
        # SQLite has one writer: writing units of work of this process queue here, in order, instead of
        # polling the file lock in SQLite's busy handler (which sleeps up to 100 ms between tries and
        # made 20 concurrent buyers 3x slower than one); other processes still meet the busy timeout
        self._write_locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = (
            weakref.WeakKeyDictionary()
        )

    def write_lock(self) -> asyncio.Lock | None:
        """SQLite: this event loop's queue of writing units of work (None on PostgreSQL)."""
        if not self.is_sqlite:
            return None
        loop = asyncio.get_running_loop()
        lock = self._write_locks.get(loop)
        if lock is None:
            lock = self._write_locks[loop] = asyncio.Lock()
        return lock

    def unit_of_work(self, write: bool = True) -> UnitOfWork:
        return UnitOfWork(self, write)

    async def dispose(self) -> None:
        await self.engine.dispose()


def _sqlite_setup(engine: AsyncEngine) -> None:
    """WAL, foreign keys, and BEGIN IMMEDIATE for writing units of work (one writer at a time, no
    deferred-upgrade deadlocks), plain BEGIN for readers."""

    @event.listens_for(engine.sync_engine, "connect")
    def _connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA foreign_keys=ON")
        cur.execute("PRAGMA busy_timeout=30000")
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.close()

    @event.listens_for(engine.sync_engine, "begin")
    def _begin(conn: Any) -> None:
        if conn.get_execution_options().get("pp_write", False):
            conn.exec_driver_sql("BEGIN IMMEDIATE")
        else:
            conn.exec_driver_sql("BEGIN")


class UnitOfWork:
    """One transaction per adapter call. Services use `uow.session` and never commit.
    Leaving without commit() rolls back (close() ends the transaction); loaded objects stay readable."""

    def __init__(self, db: Database, write: bool) -> None:
        self.db = db
        self.write = write
        self._session: AsyncSession | None = None
        self._after_commit: list[Any] = []
        self._lock: asyncio.Lock | None = None

    @property
    def session(self) -> AsyncSession:
        if self._session is None:
            raise RuntimeError("unit of work is not open")
        return self._session

    @property
    def dialect(self) -> str:
        return "sqlite" if self.db.is_sqlite else "postgresql"

    def after_commit(self, callback: Any) -> None:
        """Register a sync callable run once the transaction has committed (cache invalidation, wake-ups)."""
        self._after_commit.append(callback)

    async def __aenter__(self) -> UnitOfWork:
        lock = self.db.write_lock() if self.write else None
        if lock is not None:
            await lock.acquire()
            self._lock = lock
        try:
            self._session = self.db.sessions()
            await self._session.connection(execution_options={"pp_write": self.write})
        except BaseException:
            self._release()
            raise
        return self

    def _release(self) -> None:
        lock, self._lock = self._lock, None
        if lock is not None:
            lock.release()

    async def commit(self) -> None:
        await self.session.commit()
        callbacks, self._after_commit = self._after_commit, []
        for cb in callbacks:
            cb()

    async def rollback(self) -> None:
        await self.session.rollback()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            if exc_type is not None:
                await self.session.rollback()
        finally:
            try:
                await self.session.close()
            finally:
                self._session = None
                self._release()
