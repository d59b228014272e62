"""Hot-path statements run on the driver connection (issue 15): the SQLAlchemy Core statement stays the one
definition; it is compiled once per dialect (and per set of inserted columns) and then executed straight
on the unit of work's asyncpg / aiosqlite connection, in the same transaction, with SQLAlchemy's own bind
processors applied to the parameters. What is skipped per execution is SQLAlchemy's statement path (ORM
session execute, cache key, compiled-cache lookup, execution context, result processing): measured
~0.3-0.5 ms of CPU per statement on this machine against ~0.1 ms on the driver.

Rules for a statement run here: plain result values (ints, text, numbers, UUIDs: no result processing is
applied), no expanding IN parameters, and for an INSERT only Python-side defaults that are scalars or
zero-argument callables. Pending ORM changes are flushed first (as Session.execute's autoflush would), the
engine's `before_cursor_execute` listeners still see every statement (statement counts stay true), and a
driver error is raised as SQLAlchemy's DBAPIError subclass, as through the session.

With the lean forms off (storage/lean_setting.py) every statement here goes through the session instead
(`session.execute`: the plain twin; rows come back as SQLAlchemy Rows, result processing applied).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from sqlalchemy import text
from sqlalchemy.engine import CursorResult
from sqlalchemy.exc import DBAPIError, ResourceClosedError
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession
from sqlalchemy.sql import ClauseElement, Executable
from sqlalchemy.sql.compiler import SQLCompiler

from proxyplane.storage.lean_setting import LEAN

# the driver-level state of a transaction, kept while the transaction object lives (not in session.info)
_STATE: weakref.WeakKeyDictionary[Any, tuple[Any, Any]] = weakref.WeakKeyDictionary()


@dataclass(frozen=True)
class _Compiled:
    sql: str
    names: tuple[str, ...]
    processors: tuple[Callable[[Any], Any] | None, ...]
    fixed: dict[str, Any]  # bound values and Python-side INSERT defaults the caller does not pass


class DriverStatement:
    """A Core statement executed on the driver connection (see the module docstring)."""

    def __init__(self, stmt: ClauseElement) -> None:
        self.stmt = stmt
        self._plain = cast(Executable, stmt)  # the plain twin's (lean forms off) statement
        self._compiled: dict[tuple[str, frozenset[str]], _Compiled] = {}

    def _compile(self, dialect: Any, keys: frozenset[str]) -> _Compiled:
        found = self._compiled.get((dialect.name, keys))
        if found is not None:
            return found
        compiled = self.stmt.compile(dialect=dialect, column_keys=sorted(keys))
        assert isinstance(compiled, SQLCompiler)
        names = tuple(compiled.positiontup or ())
        if any(compiled.binds[n].expanding for n in names if n in compiled.binds):
            raise ValueError("expanding parameters are not supported on the driver path")
        fixed: dict[str, Any] = {}
        for col in getattr(compiled, "insert_prefetch", ()) or ():
            default = col.default
            if default is None or not (default.is_scalar or default.is_callable):
                raise ValueError(f"column {col.key}: only scalar or callable defaults on the driver path")
            fixed[col.key] = default
        for name in names:
            bind = compiled.binds.get(name)
            if name not in keys and name not in fixed and bind is not None and not bind.required:
                fixed[name] = bind.effective_value
        processors: dict[str, Any] = dict(compiled._bind_processors)
        found = _Compiled(compiled.string, names, tuple(processors.get(n) for n in names), fixed)
        self._compiled[(dialect.name, keys)] = found
        return found

    def _args(self, c: _Compiled, params: Mapping[str, Any]) -> tuple[Any, ...]:
        values = []
        for name, proc in zip(c.names, c.processors, strict=True):
            if name in params:
                value = params[name]
            else:
                value = c.fixed[name]
                if hasattr(value, "is_callable"):  # a column default
                    value = value.arg(None) if value.is_callable else value.arg
            values.append(proc(value) if proc is not None and value is not None else value)
        return tuple(values)

    async def rows(self, session: AsyncSession, params: Mapping[str, Any] | None = None) -> list[Any]:
        """Execute once; the result rows (tuples / asyncpg records), [] for a statement without rows."""
        params = params or {}
        if not LEAN:
            return _rows(await session.execute(self._plain, params))
        conn, dialect = await _connection(session)
        c = self._compile(dialect, frozenset(params))
        args = self._args(c, params)
        return await _run(conn, dialect, c.sql, args, many=False)

    async def rows_alone(self, engine: AsyncEngine, params: Mapping[str, Any] | None = None) -> list[Any]:
        """PostgreSQL: execute once on a pooled connection with no transaction around it (a lone read sees
        one snapshot anyway): one round trip, where a unit of work sends BEGIN, the statement and ROLLBACK,
        and builds a session. The connection goes back to the pool as it came (nothing to roll back)."""
        params = params or {}
        async with engine.connect() as conn:
            if not LEAN:
                return _rows(await conn.execute(self._plain, params))
            fairy = await conn.get_raw_connection()
            state = (conn.sync_connection, fairy.dbapi_connection, fairy.driver_connection)
            c = self._compile(conn.dialect, frozenset(params))
            return await _run(state, conn.dialect, c.sql, self._args(c, params), many=False, alone=True)

    async def scalar(self, session: AsyncSession, params: Mapping[str, Any] | None = None) -> Any:
        """The first column of the first row, or None."""
        rows = await self.rows(session, params)
        return rows[0][0] if rows else None

    async def many(self, session: AsyncSession, params: Sequence[Mapping[str, Any]]) -> None:
        """Execute once per parameter set (executemany), every set with the same keys."""
        if not params:
            return
        if not LEAN:
            await session.execute(self._plain, list(params))
            return
        conn, dialect = await _connection(session)
        c = self._compile(dialect, frozenset(params[0]))
        await _run(conn, dialect, c.sql, [self._args(c, p) for p in params], many=True)


class DriverScript:
    """Parameterless statements run together: on PostgreSQL as ONE simple query (one round trip, no rows
    back; `SAVEPOINT x; SELECT set_config(...)`), elsewhere each on its own, in order. The engine's
    `before_cursor_execute` listeners see what is sent (one statement on PostgreSQL)."""

    def __init__(self, *parts: str) -> None:
        self.parts = parts
        self.sql = "; ".join(parts)

    async def run(self, session: AsyncSession) -> None:
        if not LEAN:
            for part in self.parts:
                await session.execute(text(part))
            return
        conn, dialect = await _connection(session)
        if dialect.name == "postgresql":
            await _run(conn, dialect, self.sql, (), many=False, simple=True)
            return
        for part in self.parts:
            await _run(conn, dialect, part, (), many=False)


def _rows(result: Any) -> list[Any]:
    """The plain twin's rows (a statement without rows: [])."""
    if isinstance(result, CursorResult) and not result.returns_rows:
        return []
    try:
        return list(result.all())
    except ResourceClosedError:  # an ORM session's result of a statement without rows
        return []


async def _connection(session: AsyncSession | LeanSession) -> tuple[Any, Any]:
    """(the driver-level connection state, the dialect) of the session's transaction, looked up once per
    transaction (each lookup through the async session is a greenlet switch)."""
    if type(session) is LeanSession:
        if session.real is not None and (session.new or session.dirty or session.deleted):
            await session.flush()
        return session.state
    if session.new or session.dirty or session.deleted:
        await session.flush()  # what Session.execute's autoflush does first
    txn = session.sync_session.get_transaction()
    cached = _STATE.get(txn) if txn is not None else None
    if cached is not None:
        return cached
    conn = await session.connection()
    fairy = await conn.get_raw_connection()
    state = (conn.sync_connection, fairy.dbapi_connection, fairy.driver_connection)
    txn = session.sync_session.get_transaction()
    if txn is not None:
        _STATE[txn] = (state, conn.dialect)
    return state, conn.dialect


async def _run(
    state: Any, dialect: Any, sql: str, args: Any, many: bool, simple: bool = False, alone: bool = False
) -> list[Any]:
    """`simple` (PostgreSQL, no args): sent as a simple query, which may hold several statements.
    `alone` (PostgreSQL): no transaction is begun for it."""
    sync_conn, adapted, driver = state  # adapted: SQLAlchemy's adapter around the driver connection
    if sync_conn._has_events or sync_conn.engine._has_events:
        for fn in sync_conn.dispatch.before_cursor_execute:
            fn(sync_conn, None, sql, args, None, many)
    try:
        if dialect.name == "postgresql":
            async with adapted._execute_mutex:
                if adapted._transaction is None and not alone:  # BEGIN, as SQLAlchemy's first statement would
                    await adapted._start_transaction()
                if many:
                    await driver.executemany(sql, args)
                    return []
                if simple:
                    await driver.execute(sql)
                    return []
                return list(await driver.fetch(sql, *args))
        rows: list[Any] = await adapted.execute_rows(sql, args, many)  # storage/sqlite_driver.py
        return rows
    except Exception as exc:
        orig: BaseException = exc
        if dialect.name == "postgresql":
            try:
                adapted._handle_exception(exc)  # asyncpg's error as the DB-API error SQLAlchemy raises
            except Exception as translated:
                orig = translated
        if isinstance(orig, dialect.loaded_dbapi.Error):
            raise DBAPIError.instance(
                sql,
                args,
                orig,
                dialect.loaded_dbapi.Error,
                connection_invalidated=dropped(sync_conn, adapted, dialect, orig),
                dialect=dialect,
            ) from exc
        raise


def dropped(sync_conn: Any, adapted: Any, dialect: Any, orig: BaseException) -> bool:
    """Whether `orig` says the store dropped this connection (a restart, a cut link): then, as SQLAlchemy
    does for its own statements, every pool connection of its generation or older is marked to be replaced
    at its next checkout (this one too; it is not closed here: the unit of work's close returns it). The
    caller raises the error with connection_invalidated set, which tells invoke() a retry is possible."""
    try:
        if not dialect.is_disconnect(orig, adapted, None):
            return False
        sync_conn.engine.pool._invalidate(getattr(sync_conn, "_dbapi_connection", None), orig, _checkin=False)
    except Exception:  # noqa: BLE001 - never hide the statement's own error behind this one
        return False
    return True


class LeanSession:
    """PostgreSQL: a unit of work's session that is only a checked-out connection (storage/engine.py,
    `UnitOfWork(lean=True)`) until something needs the ORM (issue 15: an AsyncSession's construction,
    connection and close cost ~0.1 ms of CPU per unit of work; an order paid in full runs driver statements
    only). Driver statements, `begin_with` / `commit_with` and the unit of work's commit use `state`
    directly. Any other attribute builds the real AsyncSession, bound to the same connection and begun on it
    at once, and hands it on (`real`): from then on the ORM works as in a plain unit of work, in the same
    transaction (its SessionTransaction knows this `state` as every session's does)."""

    def __init__(self, sessions: Any, engine: AsyncEngine, sync_conn: Any) -> None:
        fairy = sync_conn.connection
        self.state = ((sync_conn, fairy.dbapi_connection, fairy.driver_connection), sync_conn.dialect)
        self.info: dict[str, Any] = {}
        self.real: AsyncSession | None = None
        self._sessions = sessions
        self._engine = engine

    @property
    def new(self) -> Any:
        return self.real.new if self.real is not None else ()

    @property
    def dirty(self) -> Any:
        return self.real.dirty if self.real is not None else ()

    @property
    def deleted(self) -> Any:
        return self.real.deleted if self.real is not None else ()

    def materialize(self) -> AsyncSession:
        """The real session on this connection, its transaction begun (no I/O: the driver's transaction, if
        any, is already open on the connection and the session's statements run in it)."""
        if self.real is None:
            from sqlalchemy.ext.asyncio import AsyncConnection

            sync_conn = self.state[0][0]
            real = self._sessions(bind=AsyncConnection(self._engine, sync_conn))
            real.info.update(self.info)
            self.info = real.info
            real.sync_session.connection()  # SessionTransaction + the connection's begin (no round trip)
            txn = real.sync_session.get_transaction()
            if txn is not None:
                _STATE[txn] = self.state
            self.real = real
        return self.real

    def __getattr__(self, name: str) -> Any:
        return getattr(self.materialize(), name)
