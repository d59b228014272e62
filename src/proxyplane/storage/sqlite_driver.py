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
  PARAMS_ON_LOOP parameters, or a statement text that once used more than SLOW_SECONDS of CPU on the loop
  (with integer parameters at least as large, see _SlowStatements) goes to the thread, whose sqlite3
  calls release the GIL so the loop serves other requests meanwhile.

`BEGIN IMMEDIATE` is tried on the loop with a zero busy timeout (this process's writers queue on the unit
of work's lock, so it nearly always gets the lock at once), and so is a reader's first SELECT (it takes the
WAL snapshot); when it would have to wait, nothing began and it runs again on the thread with the
connection's full busy timeout: a lock wait never blocks the loop. A deferred BEGIN (touches no file)
and a reader's COMMIT / ROLLBACK (release its snapshot) run on the loop, a writer's ROLLBACK too (it
writes nothing). A writer's COMMIT runs on the loop when it cannot
stall it: WAL mode with synchronous NORMAL (a commit appends its pages to the WAL, no fsync), at most
COMMIT_ON_LOOP_CHANGES rows changed, and this connection's automatic checkpoint turned off: a PASSIVE
checkpoint (page copies and fsyncs) runs on the thread every CHECKPOINT_EVERY writing commits instead.
A bigger COMMIT, a reader's writes and statements outside a transaction are one job on the thread each:
execute and fetch together, one hop instead of four. An order or a read request makes no thread job (one
order in CHECKPOINT_EVERY makes the checkpoint).

Closing queues ONE stop on the connection's thread (close the sqlite3 connection, end the thread) and
waits for that stop, however many closes ask (see Connection.close): aiosqlite's close() queued a stop
of its own after any stop already queued and waited for it, and the thread, ended at the first, never
answers it; SQLAlchemy asks twice when a cancel meets a statement running on the thread (its terminate:
a graceful close in a task of its own, then, the cancel going on, a forced stop), which left that task
waiting for ever, and an event loop's close, which cancels the tasks left and waits for them, with it.
"""

from __future__ import annotations

import asyncio
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
from sqlalchemy.util.concurrency import await_, in_greenlet

MANY_ON_LOOP = 32  # executemany row sets run on the loop at most
PARAMS_ON_LOOP = 256  # parameters of one statement run on the loop at most
SLOW_SECONDS = 0.002  # a statement text using more CPU than this on the loop goes to the thread from then on
_SLOW_MAX = 1000  # remembered slow statement texts (cleared when full)
COMMIT_ON_LOOP_CHANGES = 2000  # rows a transaction committed on the loop may have changed
CHECKPOINT_EVERY = 64  # writing commits between two checkpoints (on the thread); ~10 WAL pages per order


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


class _Checkpoints:
    commits = 0  # writing commits of this process since its last checkpoint


def _checkpoint(raw: sqlite3.Connection) -> list[Any]:
    return raw.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()


class _SlowStatements:
    """Statement texts once slow on the loop, each with the smallest size of its parameters then (the
    bit length of its largest integer parameter: a LIMIT, a count). The same text with parameters at least
    that size goes to the thread; a smaller one stays on the loop (one 10,000-IP order does not send every
    small order's allocation to the thread). A mark corrects itself: a statement of a marked text that
    then runs on the thread in under half of SLOW_SECONDS (its thread's CPU) raises the text's size above
    its own, so statements of that size come back to the loop. One ordinary statement that was slow once
    (a garbage-collector pass or a page fault inside it) had sent every order's `INSERT INTO services` to
    the thread for the rest of the process's life: a thread hop per order."""

    sizes: dict[str, int] = {}

    @classmethod
    def note(cls, sql: str, params: Any, seconds: float) -> None:
        if seconds > SLOW_SECONDS:
            if len(cls.sizes) >= _SLOW_MAX:
                cls.sizes.clear()
            size = _size(params)
            cls.sizes[sql] = min(size, cls.sizes.get(sql, size))

    @classmethod
    def ran_on_thread(cls, sql: str, params: Any, seconds: float) -> None:
        if seconds < SLOW_SECONDS / 2:
            smallest = cls.sizes.get(sql)
            size = _size(params)
            if smallest is not None and size >= smallest:
                cls.sizes[sql] = size + 1

    @classmethod
    def slow(cls, sql: str, params: Any) -> bool:
        smallest = cls.sizes.get(sql)
        return smallest is not None and _size(params) >= smallest


def _size(params: Any) -> int:
    values = params.values() if isinstance(params, dict) else params or ()
    return max((v.bit_length() for v in values if type(v) is int), default=0)


_NO_SNAPSHOT = ("SAVEPOINT", "RELEASE", "ROLLBACK", "PRAGMA")  # statements that read no table


def _is_select(sql: str) -> bool:
    return sql.lstrip()[:6].upper() == "SELECT"


class ClosedOnce(AsyncAdapt_aiosqlite_connection):
    """SQLAlchemy's aiosqlite adapter whose closes (the pool's close, both halves of its terminate) queue
    one stop and wait for that one (see the module docstring); the plain driver (lean forms off) too."""

    __slots__ = ("_stopping",)

    def __init__(self, dbapi: Any, connection: Any) -> None:
        super().__init__(dbapi, connection)
        self._stopping: tuple[asyncio.Future[Any] | None] | None = None  # the stop queued (its future)

    def _stop(self) -> asyncio.Future[Any] | None:
        """Queue the thread's last job once (aiosqlite's stop(): it closes the sqlite3 connection, then the
        thread ends, after the jobs queued before it); the future it resolves then (None when stop() found
        no event loop, e.g. from the garbage collector)."""
        if self._stopping is None:
            self._stopping = (self._connection.stop(),)
        return self._stopping[0]

    async def _stopped(self) -> None:
        """Wait for the one stop (see _stop). A cancel of this wait leaves the stop to end by itself."""
        future = self._stop()
        if future is not None and future.get_loop() is asyncio.get_running_loop():
            await asyncio.shield(future)

    def close(self) -> None:
        """The pool's close: the one stop, waited for (not aiosqlite's close(), see the module docstring)."""
        if in_greenlet():
            await_(self._stopped())
        else:
            self._stop()

    async def _terminate_graceful_close(self) -> None:
        await self._stopped()

    def _terminate_force_close(self) -> None:
        self._stop()


class Connection(ClosedOnce):
    """SQLAlchemy's aiosqlite adapter with the loop-thread path (see the module docstring)."""

    __slots__ = (
        "_jobs",
        "_raw",
        "_write_locked",
        "_deferred",
        "_snapshot",
        "_wrote",
        "_busy_ms",
        "_commit_on_loop",
        "_changes",
    )

    def __init__(self, dbapi: Any, connection: Any) -> None:
        super().__init__(dbapi, connection)
        self._jobs = _CountingQueue(connection._tx)
        connection._tx = self._jobs
        self._raw: sqlite3.Connection = connection._conn
        self._busy_ms: int | None = None  # the connection's busy timeout, read on first use
        self._commit_on_loop: bool | None = None  # see _small_commit, decided on the first writing commit
        self._changes = 0  # sqlite3's total_changes when the transaction began
        self._ended()

    def _ended(self) -> None:
        self._write_locked = False  # BEGIN IMMEDIATE / EXCLUSIVE succeeded: the write lock is held
        self._deferred = False  # a deferred BEGIN ran
        self._snapshot = False  # ... and then a statement that reads a table (its WAL snapshot taken)
        self._wrote = False  # ... and a statement other than a SELECT (it may hold the write lock)

    def cursor(self, server_side: bool = False) -> Any:
        if server_side:
            return self._ss_cursor_cls(self)
        return Cursor(self)

    def on_loop(self, sql: str, params: Any, many: bool) -> bool:
        """True when this statement may run synchronously on the calling thread."""
        if not self._jobs.idle():
            return False
        if not self._raw.in_transaction:
            self._ended()
            return _begin_mode(sql) == "DEFERRED"  # touches no file: it cannot wait
        if not (self._write_locked or (self._snapshot and _is_select(sql))):
            return False
        if _SlowStatements.slow(sql, params):
            return False
        if many:
            return len(params) <= MANY_ON_LOOP
        return params is None or len(params) <= PARAMS_ON_LOOP

    def run(self, cursor: Any, sql: str, params: Any, many: bool) -> list[Any] | None:
        """Execute on the calling thread; the rows (None for a statement without a result)."""
        start = time.thread_time()  # CPU of this thread: a preempted statement is not a slow one
        try:
            rows = _execute(cursor, sql, params, many)
        finally:
            _SlowStatements.note(sql, params, time.thread_time() - start)
        self._ran(sql)
        return rows

    def try_on_loop(self, cursor: Any, sql: str, params: Any) -> _Done | None:
        """A statement that takes a lock, tried on the calling thread with a zero busy timeout: BEGIN
        IMMEDIATE / EXCLUSIVE (the write lock; this process's writers queue on the unit of work's lock, so
        it nearly always gets it at once), or a reader's first SELECT (its WAL snapshot). None when it
        would have to wait (nothing began, no snapshot taken): the caller runs it on the thread with the
        connection's full busy timeout."""
        if not self._jobs.idle():
            return None
        if _begin_mode(sql) in ("IMMEDIATE", "EXCLUSIVE"):
            if self._raw.in_transaction:
                return None
        elif not (
            self._deferred
            and not self._snapshot
            and self._raw.in_transaction
            and _is_select(sql)
            and (params is None or len(params) <= PARAMS_ON_LOOP)
            and not _SlowStatements.slow(sql, params)
        ):
            return None
        if self._busy_ms is None:
            self._busy_ms = int(self._raw.execute("PRAGMA busy_timeout").fetchone()[0])
        self._raw.execute("PRAGMA busy_timeout = 0")
        start = time.thread_time()
        try:
            rows = _execute(cursor, sql, params, False)
        except sqlite3.OperationalError as exc:
            if exc.sqlite_errorcode & 0xFF == sqlite3.SQLITE_BUSY:
                return None
            raise
        finally:
            self._raw.execute(f"PRAGMA busy_timeout = {self._busy_ms}")
            _SlowStatements.note(sql, params, time.thread_time() - start)
        self._ran(sql)
        return _Done(rows)

    async def run_on_thread(self, cursor: Any, sql: str, params: Any, many: bool) -> list[Any] | None:
        """Execute and fetch as ONE job on the connection's thread."""
        rows: list[Any] | None
        rows, seconds = await self._connection._execute(_timed_execute, cursor, sql, params, many)
        _SlowStatements.ran_on_thread(sql, params, seconds)
        self._ran(sql)
        return rows

    def _ran(self, sql: str) -> None:
        """The transaction's state after `sql` succeeded."""
        head = _head(sql)
        if head == "BEGIN":
            self._ended()
            self._write_locked = _begin_mode(sql) != "DEFERRED"
            self._deferred = not self._write_locked
            self._changes = self._raw.total_changes
        elif self._deferred and self._raw.in_transaction and head not in _NO_SNAPSHOT:
            self._snapshot = True
            self._wrote = self._wrote or head != "SELECT"

    def go(self, cursor: Any, sql: str, params: Any, many: bool) -> Any:
        """The synchronous part of one statement: its rows (or None) when it ran here, else the awaitable
        that runs it on the thread."""
        if self.on_loop(sql, params, many):
            return _Done(self.run(cursor, sql, params, many))
        if not many:
            done = self.try_on_loop(cursor, sql, params)
            if done is not None:
                return done
        return self._on_thread(cursor, sql, params, many)

    async def _on_thread(self, cursor: Any, sql: str, params: Any, many: bool) -> list[Any] | None:
        async with self._execute_mutex:
            return await self.run_on_thread(cursor, sql, params, many)

    async def execute_rows(self, sql: str, params: Any, many: bool) -> list[Any]:
        """For storage/driver.py: one statement, its rows ([] without a result); the same rules."""
        cursor = self._raw.cursor()
        try:
            step = self.go(cursor, sql, params, many)
            rows = step.rows if type(step) is _Done else await step
            return rows or []
        finally:
            cursor.close()

    def _quiet(self) -> bool:
        """The transaction holds no write lock and the thread is idle: ending it cannot wait or write."""
        return not self._write_locked and not self._wrote and self._jobs.idle()

    def rollback(self) -> None:
        if not self._connection._connection:
            return
        if not self._jobs.idle():  # e.g. a cancelled BEGIN still waiting: roll back after it, on the thread
            super().rollback()
        elif not self._raw.in_transaction:  # nothing to roll back (the pool's reset after a commit)
            pass
        else:  # a ROLLBACK never waits and writes nothing
            self._raw.rollback()
        self._ended()

    def commit(self) -> None:
        if not self._connection._connection:
            super().commit()
        elif self._quiet():  # a reader's COMMIT only releases its snapshot
            self._raw.commit()
        elif self._write_locked and self._jobs.idle() and self._small_commit():
            self._raw.commit()  # appends its pages to the WAL: no fsync, no checkpoint (see _small_commit)
            self._committed_write()
        else:
            super().commit()
            self._committed_write()
        self._ended()

    def _small_commit(self) -> bool:
        """A writer's COMMIT may run on the loop: the database is in WAL mode with synchronous NORMAL or
        OFF (a commit appends to the WAL without an fsync), this connection's automatic checkpoint is off
        (checkpoints run on the thread, see _committed_write), and the transaction changed at most
        COMMIT_ON_LOOP_CHANGES rows (a bigger one may leave many dirty pages to write)."""
        if self._commit_on_loop is None:
            mode = str(self._raw.execute("PRAGMA journal_mode").fetchone()[0]).lower()
            sync = int(self._raw.execute("PRAGMA synchronous").fetchone()[0])
            self._commit_on_loop = mode == "wal" and sync <= 1
            if self._commit_on_loop:
                self._raw.execute("PRAGMA wal_autocheckpoint = 0").fetchall()
        return self._commit_on_loop and self._raw.total_changes - self._changes <= COMMIT_ON_LOOP_CHANGES

    def _committed_write(self) -> None:
        """Every CHECKPOINT_EVERY writing commits of this process, a PASSIVE checkpoint on the thread (it
        copies WAL pages into the database and fsyncs; it never waits on a lock)."""
        if self._commit_on_loop is None:
            return  # this connection kept SQLite's automatic checkpoint
        _Checkpoints.commits += 1
        if _Checkpoints.commits >= CHECKPOINT_EVERY and in_greenlet():
            _Checkpoints.commits = 0
            try:
                await_(self._connection._execute(_checkpoint, self._raw))
            except sqlite3.OperationalError:
                pass  # the next one retries


class _Done:
    __slots__ = ("rows",)

    def __init__(self, rows: list[Any] | None) -> None:
        self.rows = rows


def _head(sql: str) -> str:
    return sql.lstrip()[:9].split(None, 1)[0].upper() if sql.strip() else ""


def _begin_mode(sql: str) -> str:
    """DEFERRED, IMMEDIATE or EXCLUSIVE for a BEGIN statement, "" for any other."""
    words = sql.upper().split()
    if not words or words[0] != "BEGIN":
        return ""
    return words[1] if len(words) > 1 and words[1] in ("IMMEDIATE", "EXCLUSIVE") else "DEFERRED"


def _execute(cursor: sqlite3.Cursor, sql: str, params: Any, many: bool) -> list[Any] | None:
    if many:
        cursor.executemany(sql, params)
        return None
    cursor.execute(sql, () if params is None else params)
    return cursor.fetchall() if cursor.description else None


def _timed_execute(
    cursor: sqlite3.Cursor, sql: str, params: Any, many: bool
) -> tuple[list[Any] | None, float]:
    """_execute on the connection's thread, with the CPU that thread spent on it."""
    start = time.thread_time()
    rows = _execute(cursor, sql, params, many)
    return rows, time.thread_time() - start


async def _inline(value: Any) -> Any:
    return value


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
        try:
            step = self._adapt_connection.go(self._cursor, sql, params, many)
            # a statement run here is still awaited once (a coroutine that never suspends: two greenlet
            # switches, no loop iteration): SQLAlchemy's AsyncConnection.execute requires an await
            rows = await_(_inline(step.rows) if type(step) is _Done else step)
        except Exception as error:
            self._adapt_connection._handle_exception(error)
        self._rows = collections.deque(rows) if rows is not None else collections.deque()


class DBAPI(AsyncAdapt_aiosqlite_dbapi):
    """The DB-API module handed to the engine (`create_async_engine(..., module=dbapi())`)."""

    def connect(self, *arg: Any, **kw: Any) -> Connection:
        kw["check_same_thread"] = False  # the loop thread runs statements too, never at the same time
        connection = self.aiosqlite.connect(*arg, **kw)
        connection._thread.daemon = True
        return Connection(self, await_(connection))


class PlainDBAPI(AsyncAdapt_aiosqlite_dbapi):
    """Plain aiosqlite (the lean forms off: every statement on the connection's thread), closed once."""

    def connect(self, *arg: Any, **kw: Any) -> ClosedOnce:
        connection = self.aiosqlite.connect(*arg, **kw)
        connection._thread.daemon = True
        return ClosedOnce(self, await_(connection))


def dbapi(plain: bool = False) -> DBAPI | PlainDBAPI:
    """`plain`: SQLAlchemy's aiosqlite adapter, only its closes changed (ClosedOnce)."""
    import aiosqlite

    return (PlainDBAPI if plain else DBAPI)(aiosqlite, sqlite3)


__all__: Sequence[str] = ("ClosedOnce", "Connection", "Cursor", "DBAPI", "PlainDBAPI", "dbapi")
