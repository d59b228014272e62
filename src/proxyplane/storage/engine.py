"""Database engine and the unit of work: the only place that commits."""

from __future__ import annotations

import asyncio
import random
import time
import weakref
from types import TracebackType
from typing import Any, cast

from sqlalchemy import event
from sqlalchemy.exc import DisconnectionError
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker, create_async_engine
from sqlalchemy.util.concurrency import greenlet_spawn

from proxyplane.core.call import CallContext
from proxyplane.storage import sqlite_driver, transaction
from proxyplane.storage.driver import DriverStatement, LeanSession
from proxyplane.storage.lean_setting import LEAN

CONNECT_TIMEOUT_SECONDS = 5.0


class Database:
    def __init__(self, url: str, **engine_kwargs: Any) -> None:
        self.url = url
        self.is_sqlite = url.startswith("sqlite")
        if self.is_sqlite:
            engine_kwargs.setdefault("connect_args", {"timeout": 30})
            if url.startswith("sqlite+aiosqlite"):  # lean: statements on the loop once they cannot wait
                engine_kwargs.setdefault("module", sqlite_driver.dbapi(plain=not LEAN))  # both closed once
        else:
            engine_kwargs.setdefault("pool_size", 30)
            # a store that does not answer fails a request within seconds (503 + Retry-After, issue 35),
            # never hangs it: connect timeout, and the wait for a pooled connection
            engine_kwargs.setdefault("connect_args", {"timeout": CONNECT_TIMEOUT_SECONDS})
            engine_kwargs.setdefault("pool_timeout", CONNECT_TIMEOUT_SECONDS)
            engine_kwargs.setdefault("max_overflow", 10)
            engine_kwargs.setdefault("pool_recycle", POOL_RECYCLE_SECONDS)
            # the most recently returned connection first: at low load a few backends stay hot and the
            # rest idle (FIFO handed every request to the next of the 30 in turn: each backend then made
            # its cached plans, foreign-key checks included, at its first use; with a young table those
            # are sequential scans kept until the next ANALYZE: decisions, "Start-up")
            engine_kwargs.setdefault("pool_use_lifo", True)
        self.engine: AsyncEngine = create_async_engine(url, **engine_kwargs)
        if self.is_sqlite:
            _sqlite_setup(self.engine)
        elif not engine_kwargs.get("pool_pre_ping"):
            _ping_when_idle(self.engine, engine_kwargs.get("pool_recycle", -1))
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

    def unit_of_work(self, write: bool = True, lean: bool = False) -> UnitOfWork:
        """`lean` (PostgreSQL only; ignored on SQLite): the session is a LeanSession (storage/driver.py), a
        checked-out connection until something needs the ORM (and the lean forms are on: lean_setting)."""
        return UnitOfWork(self, write, lean=lean and LEAN and not self.is_sqlite)

    async def warm(self, connections: int | None = None) -> int:
        """PostgreSQL: open up to `connections` pool connections at once (default: the pool's size) and
        return them to the pool, so the first burst of requests after a start does not pay a connection
        set-up each (backend start, type introspection: ~10 ms of server time apiece, queued behind each
        other). Returns how many were opened; SQLite: 0."""
        if self.is_sqlite:
            return 0
        want = connections if connections is not None else self.engine.pool.size()  # type: ignore[attr-defined]
        held: list[Any] = []
        try:
            connects = (self.engine.connect() for _ in range(want))
            opened = await asyncio.gather(*connects, return_exceptions=True)
            held = [c for c in opened if not isinstance(c, BaseException)]
            errors = [c for c in opened if isinstance(c, BaseException)]
            if errors and not held:
                raise errors[0]
            return len(held)
        finally:
            for conn in held:
                await conn.close()

    async def dispose(self) -> None:
        await self.engine.dispose()


# PostgreSQL pool: no ping per checkout (a round trip per unit of work); a connection idle in the pool
# longer than IDLE_PING_SECONDS is pinged when checked out (and replaced if dead: a server restart or a
# dropped idle connection), every connection is replaced after POOL_RECYCLE_SECONDS, and a connection
# that fails with a disconnect error in use invalidates the whole pool (SQLAlchemy's default).
IDLE_PING_SECONDS = 10.0
POOL_RECYCLE_SECONDS = 1800


def _ping_when_idle(engine: AsyncEngine, recycle: float) -> None:
    @event.listens_for(engine.sync_engine, "connect")
    def _connect(_dbapi_conn: Any, record: Any) -> None:
        # spread the recycling: connections opened together (a start, Database.warm) would otherwise all
        # reach pool_recycle in the same second and be reopened in one burst under load; each is replaced
        # at a random point of the last quarter of its lifetime instead (the checkout below)
        if recycle > 0:
            record.info["pp_replace_at"] = time.monotonic() + recycle * random.uniform(0.75, 1.0)

    @event.listens_for(engine.sync_engine, "checkin")
    def _checkin(_dbapi_conn: Any, record: Any) -> None:
        record.info["pp_idle_since"] = time.monotonic()

    @event.listens_for(engine.sync_engine, "checkout")
    def _checkout(dbapi_conn: Any, record: Any, _proxy: Any) -> None:
        if time.monotonic() > record.info.get("pp_replace_at", float("inf")):
            raise DisconnectionError("connection reached its lifetime: replaced")  # the pool reconnects
        since = record.info.pop("pp_idle_since", None)
        if since is None or time.monotonic() - since < IDLE_PING_SECONDS:
            return
        try:
            dbapi_conn.ping()
        except Exception as exc:  # the pool drops this connection and checks out another
            raise DisconnectionError(f"connection idle for {time.monotonic() - since:.0f} s is dead") from exc


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


_OPTIONS = {write: {"pp_write": write} for write in (False, True)}  # the connection's execution options


class UnitOfWork:
    """One transaction per adapter call. Services use `uow.session` and never commit.
    Leaving without commit() rolls back (close() ends the transaction); loaded objects stay readable."""

    def __init__(self, db: Database, write: bool, lean: bool = False) -> None:
        self.db = db
        self.write = write
        self.lean = lean
        self._session: AsyncSession | None = None
        self._lean: LeanSession | None = None
        self._after_commit: list[Any] = []
        self._lock: asyncio.Lock | None = None
        self.call = CallContext()  # typed per-call state services reach via core.call.call_context

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
            if self.lean:
                sync_conn = await greenlet_spawn(self.db.engine.sync_engine.connect)
                self._lean = LeanSession(self.db.sessions, self.db.engine, sync_conn)
                self._session = cast(AsyncSession, self._lean)
            else:
                self._session = self.db.sessions()
                await transaction.open_connection(self._session, _OPTIONS[self.write])
            self.call.attach(self._session)
        except BaseException:
            self._release()
            raise
        return self

    def _release(self) -> None:
        lock, self._lock = self._lock, None
        if lock is not None:
            lock.release()

    async def commit(self, final: bool = False) -> None:
        """Commit. `final`: nothing runs in this unit of work after it (invoke), so on SQLite too the COMMIT
        goes to the driver connection instead of through Session.commit (storage/transaction.commit)."""
        lean = self._lean
        if lean is not None and lean.real is None:
            await transaction.commit_state(lean.state)
        elif not await transaction.commit(self.session, final):
            await self.session.commit()
        self._committed()

    async def commit_with(self, stmt: DriverStatement, params: dict[str, Any], final: bool = False) -> None:
        """Run `stmt` as the transaction's last statement, then commit: one round trip on PostgreSQL when
        the transaction was begun by storage/transaction.begin_with, else the statement and commit()."""
        if not await transaction.commit_with(self.session, stmt, params):
            await stmt.rows(self.session, params)
            await self.commit(final)
            return
        self._committed()

    def _committed(self) -> None:
        callbacks, self._after_commit = self._after_commit, []
        for cb in callbacks:
            cb()

    async def rollback(self) -> None:
        lean = self._lean
        if lean is None:
            await self.session.rollback()
            return
        if lean.real is not None:
            await lean.real.rollback()
        await greenlet_spawn(lean.state[0][1].rollback)  # the driver's transaction, if still open

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._lean is not None:
            await self._close_lean(self._lean, exc_type is not None)
            return
        try:
            if exc_type is not None:
                await self.session.rollback()
        finally:
            try:
                await self.session.close()
            finally:
                self._session = None
                self._release()

    async def _close_lean(self, lean: LeanSession, failed: bool) -> None:
        """The real session (if any) closed, then the connection back to the pool: its return rolls back a
        transaction still open (an error, or no commit), as a session's close does."""
        try:
            if lean.real is not None:
                try:
                    if failed:
                        await lean.real.rollback()
                finally:
                    await lean.real.close()
        finally:
            self._session = self._lean = None
            try:
                await greenlet_spawn(lean.state[0][0].close)
            finally:
                self._release()
