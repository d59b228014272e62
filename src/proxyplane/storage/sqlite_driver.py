"""SQLite through aiosqlite, with statements run on the event loop's thread once they cannot wait (issue 15).

aiosqlite runs every call on the connection's own thread: a queue put, a thread wake-up, and the result
handed back to the loop (call_soon_threadsafe: an eventfd write and a loop wake-up), and SQLAlchemy's
adapter makes four such calls per statement (cursor, execute, fetchall, close). That was ~0.2 ms of CPU
per statement, ~15 statements per order.

Here the same aiosqlite connection (its thread, SQLAlchemy's pool, terminate and close) is kept, but a
statement runs synchronously on the calling (loop) thread when all of these hold:

- the connection's transaction holds its lock: a `BEGIN IMMEDIATE` (or EXCLUSIVE) succeeded (the write
  lock: no statement of this transaction can wait on another connection), or a deferred `BEGIN` has run
  one statement (its WAL read snapshot is taken) and this statement is a SELECT (a read in a snapshot
  never waits; a write could need the write lock and wait on the busy timeout, so it goes to the thread);
- the thread has no job of this connection queued or running (the sqlite3 connection, opened with
  check_same_thread=False, is never used by two threads at once; a cancelled await can leave a job
  running);
- the statement is not known to be long: an executemany of more than MANY_ON_LOOP rows, more than
  PARAMS_ON_LOOP parameters, or a statement text that once took more than SLOW_SECONDS on the loop goes to
  the thread, whose sqlite3 calls release the GIL so the loop serves other requests meanwhile.

Everything else (BEGIN, which may wait on the busy timeout; COMMIT, which may run a WAL checkpoint;
statements outside a transaction; the first statement of a reader) is one job on the thread: execute and
fetch together, one hop instead of four. A ROLLBACK with no transaction open is skipped.
"""

from __future__ import annotations

import collections
import sqlite3
import time
from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy.dialects.sqlite.aiosqlite import (
    AsyncAdapt_aiosqlite_connection,
    AsyncAdapt_aiosqlite_cursor,
    AsyncAdapt_aiosqlite_dbapi,
)
from sqlalchemy.util.concurrency import await_

MANY_ON_LOOP = 32  # executemany row sets run on the loop at most
PARAMS_ON_LOOP = 256  # parameters of one statement run on the loop at most
SLOW_SECONDS = 0.002  # a statement text using more CPU than this on the loop goes to the thread from then on
_SLOW_MAX = 1000  # remembered slow statement texts (cleared when full)


class _CountingQueue:
    """Stands in for aiosqlite's job queue on the loop side: counts jobs put and finished, so the loop knows
    when the worker thread is idle (the worker keeps reading the original queue)."""

    def __init__(self, queue: Any) -> None:
        self._queue = queue
        self.put = 0
        self.finished = 0  # written by the worker thread only

    def put_nowait(self, item: tuple[Any, Callable[[], Any]]) -> None:
        future, function = item

        def job() -> Any:
            try:
                return function()
            finally:
                self.finished += 1

        self.put += 1
        self._queue.put_nowait((future, job))

    def idle(self) -> bool:
        return self.finished == self.put


class _SlowStatements:
    texts: set[str] = set()

    @classmethod
    def note(cls, sql: str, seconds: float) -> None:
        if seconds > SLOW_SECONDS:
            if len(cls.texts) >= _SLOW_MAX:
                cls.texts.clear()
            cls.texts.add(sql)


_NO_SNAPSHOT = ("SAVEPOINT", "RELEASE", "ROLLBACK", "PRAGMA")  # statements that read no table


def _is_select(sql: str) -> bool:
    return sql.lstrip()[:6].upper() == "SELECT"


class Connection(AsyncAdapt_aiosqlite_connection):
    """SQLAlchemy's aiosqlite adapter with the loop-thread path (see the module docstring)."""

    __slots__ = ("_jobs", "_raw", "_write_locked", "_snapshot", "_deferred")

    def __init__(self, dbapi: Any, connection: Any) -> None:
        super().__init__(dbapi, connection)
        self._jobs = _CountingQueue(connection._tx)
        connection._tx = self._jobs
        self._raw: sqlite3.Connection = connection._conn
        self._write_locked = False  # BEGIN IMMEDIATE / EXCLUSIVE succeeded
        self._deferred = False  # a deferred BEGIN ran, its snapshot not yet taken
        self._snapshot = False  # a deferred transaction's first statement ran

    def cursor(self, server_side: bool = False) -> Any:
        if server_side:
            return self._ss_cursor_cls(self)
        return Cursor(self)

    def on_loop(self, sql: str, params: Any, many: bool) -> bool:
        """True when this statement may run synchronously on the calling thread."""
        if not self._raw.in_transaction:
            self._write_locked = self._snapshot = self._deferred = False
            return False
        if not (self._write_locked or (self._snapshot and _is_select(sql))):
            return False
        if not self._jobs.idle() or sql in _SlowStatements.texts:
            return False
        if many:
            return len(params) <= MANY_ON_LOOP
        return params is None or len(params) <= PARAMS_ON_LOOP

    def run(self, cursor: Any, sql: str, params: Any, many: bool) -> list[Any] | None:
        """Execute on the calling thread; the rows (None for a statement without a result)."""
        start = time.thread_time()  # CPU of this thread: a preempted statement is not a slow one
        try:
            return _execute(cursor, sql, params, many)
        finally:
            _SlowStatements.note(sql, time.thread_time() - start)

    async def run_on_thread(self, cursor: Any, sql: str, params: Any, many: bool) -> list[Any] | None:
        """Execute and fetch as ONE job on the connection's thread."""
        head = sql.lstrip()[:16].upper()
        rows = await self._connection._execute(_execute, cursor, sql, params, many)
        if head.startswith(("BEGIN IMMEDIATE", "BEGIN EXCLUSIVE")):
            self._write_locked, self._deferred, self._snapshot = True, False, False
        elif head.startswith("BEGIN"):
            self._write_locked, self._deferred, self._snapshot = False, True, False
        elif self._deferred and self._raw.in_transaction and not head.startswith(_NO_SNAPSHOT):
            self._deferred, self._snapshot = False, True
        return rows

    async def execute_rows(self, sql: str, params: Any, many: bool) -> list[Any]:
        """For storage/driver.py: one statement, its rows ([] without a result); the same rules."""
        cursor = self._raw.cursor()
        try:
            if self.on_loop(sql, params, many):
                rows = self.run(cursor, sql, params, many)
            else:
                async with self._execute_mutex:
                    rows = await self.run_on_thread(cursor, sql, params, many)
            return rows or []
        finally:
            cursor.close()

    def rollback(self) -> None:
        if not self._connection._connection:
            return
        if not self._raw.in_transaction:  # nothing to roll back (the pool's reset after a commit)
            self._write_locked = self._snapshot = self._deferred = False
            return
        super().rollback()
        self._write_locked = self._snapshot = self._deferred = False

    def commit(self) -> None:
        super().commit()
        self._write_locked = self._snapshot = self._deferred = False


def _execute(cursor: sqlite3.Cursor, sql: str, params: Any, many: bool) -> list[Any] | None:
    if many:
        cursor.executemany(sql, params)
        return None
    cursor.execute(sql, () if params is None else params)
    return cursor.fetchall() if cursor.description else None


async def _inline(fn: Callable[..., Any], *args: Any) -> Any:
    return fn(*args)


class Cursor(AsyncAdapt_aiosqlite_cursor):
    """A plain sqlite3 cursor (created on the calling thread: it touches no database) whose statements run
    through Connection.on_loop / run / run_on_thread; rows are buffered as in SQLAlchemy's adapter."""

    __slots__ = ()
    _awaitable_cursor_close = False
    _adapt_connection: Connection

    def _make_new_cursor(self, connection: Any) -> Any:
        return connection._conn.cursor()

    def _aenter_cursor(self, cursor: Any) -> Any:
        return cursor

    def execute(self, operation: Any, parameters: Any = None) -> Any:
        self._go(operation, parameters, many=False)

    def executemany(self, operation: Any, seq_of_parameters: Any) -> Any:
        self._go(operation, seq_of_parameters, many=True)

    def _go(self, sql: str, params: Any, many: bool) -> None:
        conn = self._adapt_connection
        try:
            if conn.on_loop(sql, params, many):
                # run inside an awaitable that never suspends: SQLAlchemy's AsyncConnection.execute
                # requires its greenlet to have awaited (two greenlet switches, no loop iteration)
                rows = await_(_inline(conn.run, self._cursor, sql, params, many))
            else:
                rows = await_(self._on_thread(sql, params, many))
        except Exception as error:
            conn._handle_exception(error)
        self._rows = collections.deque(rows) if rows is not None else collections.deque()

    async def _on_thread(self, sql: str, params: Any, many: bool) -> list[Any] | None:
        conn = self._adapt_connection
        async with conn._execute_mutex:
            return await conn.run_on_thread(self._cursor, sql, params, many)


class DBAPI(AsyncAdapt_aiosqlite_dbapi):
    """The DB-API module handed to the engine (`create_async_engine(..., module=dbapi())`)."""

    def connect(self, *arg: Any, **kw: Any) -> Connection:
        kw["check_same_thread"] = False  # the loop thread runs statements too, never at the same time
        connection = self.aiosqlite.connect(*arg, **kw)
        connection._thread.daemon = True
        return Connection(self, await_(connection))


def dbapi() -> DBAPI:
    import aiosqlite

    return DBAPI(aiosqlite, sqlite3)


__all__: Sequence[str] = ("Connection", "Cursor", "DBAPI", "dbapi")
