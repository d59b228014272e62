"""The unit of work's transaction on the driver connection (issue 15): fewer greenlet switches, round trips.

- `open_connection`: the session's connection checked out and its driver state remembered for
  storage/driver.py in one greenlet switch (it was three: connection, then the raw connection per first
  DriverStatement).
- `commit` (PostgreSQL): COMMIT sent on the driver connection, pending ORM changes flushed first, instead of
  Session.commit's greenlet switches. The session still holds its (now empty) transaction: its close() ends
  it with a ROLLBACK the adapter skips (no driver transaction open) and returns the connection to the pool.
- `begin_with` / `commit_with` (PostgreSQL): the transaction's first statement sent with its BEGIN, and its
  last one with its COMMIT, each pair as ONE simple query (one round trip instead of two). Simple queries
  carry no parameters, so the statement's values are written as literals (`literal`: ints, text with its
  quotes doubled, which is exact under standard_conforming_strings, checked per connection, datetimes as
  ISO 8601 text); the statement is still the one Core definition compiled by DriverStatement, its bind
  processors applied. Anything without a literal form, SQLite, or a transaction in another state: the
  functions send nothing and say so, and the caller runs its prepared statement and commits as usual.

Plans reused (PostgreSQL): a statement sent by `begin_with` / `commit_with` is PREPAREd once per connection
(a server-side prepared statement named after its SQL text) and then sent as `EXECUTE name(<literals>)`:
the one round trip stays, and PostgreSQL no longer parses and plans the statement on every call (the
response store's plan alone cost ~0.13 ms per order). The PREPARE is its own query, sent before a BEGIN
(outside any transaction, so its failure, e.g. a table not yet migrated, costs nothing but the plain
literal statement); a statement first seen by `commit_with` (inside a transaction) is sent as literals
that time and prepared before the connection's next `begin_with`.

A transaction begun by `begin_with` sits where SQLAlchemy's asyncpg adapter keeps asyncpg's Transaction
(`_Begun`), so the adapter's own commit/rollback (Session.commit, close, an error) end it as usual.
"""

from __future__ import annotations

import hashlib
import re
import weakref
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.util.concurrency import greenlet_spawn

from proxyplane.storage.driver import _STATE, DriverStatement, LeanSession, dropped
from proxyplane.storage.lean_setting import LEAN

_PLACEHOLDER = re.compile(r"\$(\d+)")  # asyncpg's positional parameters in a compiled statement
# statements worth preparing (name -> SQL with $n parameters), and per driver connection the names it holds
_WANTED: dict[str, str] = {}
_NAMES: dict[str, str] = {}  # SQL text -> its prepared statement's name
_PREPARED: weakref.WeakKeyDictionary[Any, dict[str, bool]] = weakref.WeakKeyDictionary()  # name -> done


async def open_connection(session: AsyncSession, options: Mapping[str, Any]) -> None:
    """Check out the session's connection (with these execution options) and remember its driver state for
    the transaction (UnitOfWork.__aenter__)."""
    await session.run_sync(_remember, options)


def _remember(sync_session: Any, options: Mapping[str, Any]) -> None:
    conn = sync_session.connection(execution_options=options)
    fairy = conn.connection  # checked out just now: an attribute read, no I/O
    txn = sync_session.get_transaction()
    if txn is not None:
        _STATE[txn] = ((conn, fairy.dbapi_connection, fairy.driver_connection), conn.dialect)


async def commit(session: AsyncSession, final: bool = False) -> bool:
    """COMMIT on the driver connection (see the module docstring): PostgreSQL always; SQLite only when
    `final` (nothing runs in the unit of work after it: SQLAlchemy, still holding its transaction, would not
    send the BEGIN IMMEDIATE of a next statement, which would then run outside a transaction; PostgreSQL's
    adapter begins one itself). False (nothing done: the caller uses Session.commit) otherwise, for a
    transaction whose driver state is not known, an inactive transaction (a failed flush: Session.commit
    raises) or when commit listeners are registered on the session or its connection (e.g. apikeys'
    cache drop after commit), and always with the lean forms off (storage/lean_setting.py)."""
    if not LEAN:
        return False
    sync = session.sync_session
    txn = sync.get_transaction()
    cached = _STATE.get(txn) if txn is not None else None
    if cached is None or txn is None or not txn.is_active:
        return False
    (sync_conn, adapted, _driver), dialect = cached
    sqlite = dialect.name == "sqlite"
    if (sqlite and not final) or (not sqlite and dialect.name != "postgresql"):
        return False
    if _commit_listened(sync, sync_conn):
        return False
    if sync.new or sync.dirty or sync.deleted:
        await session.flush()
    if sqlite:  # the adapter's own COMMIT (storage/sqlite_driver.py: a writer's on aiosqlite's thread)
        try:
            await greenlet_spawn(adapted.commit)
        except Exception as exc:
            raise _translated(exc, sync_conn, adapted, dialect, "COMMIT") from exc
        return True
    async with adapted._execute_mutex:
        begun, adapted._transaction = adapted._transaction, None
        if begun is None:  # no statement ran: nothing to commit
            return True
        try:
            await begun.commit()
        except Exception as exc:
            raise _translated(exc, sync_conn, adapted, dialect, "COMMIT") from exc
    return True


async def begin_with(session: AsyncSession, stmt: DriverStatement, params: Mapping[str, Any]) -> str | None:
    """PostgreSQL, as the transaction's first statement: `BEGIN; <stmt>` as one simple query. Its command
    status ('INSERT 0 1'), or None when this does not apply (nothing was sent; always with the lean forms
    off)."""
    found = _simple_state(session) if LEAN else None
    if found is None or session.new or session.dirty or session.deleted:
        return None
    (sync_conn, adapted, driver), dialect = found
    if adapted._transaction is not None or adapted.isolation_level == "autocommit":
        return None
    try:
        sql, name = _sql(stmt, dialect, params, driver)
    except (TypeError, ValueError):
        return None
    async with adapted._execute_mutex:
        if adapted._transaction is not None:
            return None
        if len(_PREPARED.get(driver, ())) < len(_WANTED) and await _prepare(driver, name):
            sql = _execute_sql(stmt, dialect, params, name)
        _before_cursor(sync_conn, sql, stmt, dialect, params)
        adapted._transaction = _Begun(driver)  # set first: a failure leaves it to be rolled back
        try:
            return str(await driver.execute(f"{_begin_sql(adapted)}; {sql}"))
        except Exception as exc:
            raise _translated(exc, sync_conn, adapted, dialect, sql) from exc


async def commit_with(
    session: AsyncSession | LeanSession, stmt: DriverStatement, params: Mapping[str, Any]
) -> bool:
    """PostgreSQL: `<stmt>; COMMIT` as one simple query ending a transaction `begin_with` began (pending ORM
    changes flushed first). False when this does not apply (nothing was sent; always with the lean forms
    off)."""
    found = _simple_state(session) if LEAN else None
    if found is None:
        return False
    (sync_conn, adapted, driver), dialect = found
    if type(adapted._transaction) is not _Begun:
        return False
    sync = None if type(session) is LeanSession and session.real is None else session.sync_session
    if sync is not None:
        txn = sync.get_transaction()
        if txn is None or not txn.is_active or _commit_listened(sync, sync_conn):
            return False
    try:
        sql, _name = _sql(stmt, dialect, params, driver)
    except (TypeError, ValueError):
        return False
    if sync is not None and (sync.new or sync.dirty or sync.deleted):
        await session.flush()
    _before_cursor(sync_conn, sql, stmt, dialect, params)
    async with adapted._execute_mutex:
        if type(adapted._transaction) is not _Begun:
            return False
        try:
            await driver.execute(f"{sql}; COMMIT")
        except Exception as exc:
            raise _translated(exc, sync_conn, adapted, dialect, sql) from exc
        adapted._transaction = None  # committed (a failure above leaves it open, to be rolled back)
    return True


async def commit_state(state: tuple[Any, Any]) -> None:
    """PostgreSQL: COMMIT the transaction open on a unit of work's connection (`state`: a LeanSession's),
    nothing when none is (no statement ran)."""
    (sync_conn, adapted, _driver), dialect = state
    async with adapted._execute_mutex:
        begun, adapted._transaction = adapted._transaction, None
        if begun is None:
            return
        try:
            await begun.commit()
        except Exception as exc:
            raise _translated(exc, sync_conn, adapted, dialect, "COMMIT") from exc


class _Begun:
    """A transaction begun by `begin_with`, where the asyncpg adapter keeps asyncpg's Transaction."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn

    async def commit(self) -> None:
        await self.conn.execute("COMMIT")

    async def rollback(self) -> None:
        await self.conn.execute("ROLLBACK")


def literal(value: int | str | datetime | None) -> str:
    """A value as PostgreSQL literal text for a simple query. Text holding NUL (which PostgreSQL text cannot
    hold) raises ValueError; other types TypeError."""
    if value is None:
        return "NULL"
    if isinstance(value, bool) or not isinstance(value, int | str | datetime):
        raise TypeError(f"no literal for {type(value).__name__}")
    if isinstance(value, int):
        return str(int(value))
    text = value.isoformat() if isinstance(value, datetime) else value
    if "\x00" in text:
        raise ValueError("text with NUL")
    return "'" + text.replace("'", "''") + "'"


def literal_sql(stmt: DriverStatement, dialect: Any, params: Mapping[str, Any]) -> str:
    """The statement with its values (bind processors and defaults applied) written as literals."""
    c = stmt._compile(dialect, frozenset(params))
    args = stmt._args(c, params)
    return _PLACEHOLDER.sub(lambda m: literal(args[int(m.group(1)) - 1]), c.sql)


def _sql(stmt: DriverStatement, dialect: Any, params: Mapping[str, Any], driver: Any) -> tuple[str, str]:
    """(what to send: EXECUTE of the statement prepared on this connection, else the statement with
    literal values; the statement's prepared name). Raises as `literal_sql`."""
    c = stmt._compile(dialect, frozenset(params))
    name = _NAMES.get(c.sql)
    if name is None:
        name = _NAMES.setdefault(c.sql, "pp_" + hashlib.sha1(c.sql.encode()).hexdigest()[:20])
        _WANTED[name] = c.sql
    if _PREPARED.get(driver, {}).get(name):
        return _execute_sql(stmt, dialect, params, name), name
    return literal_sql(stmt, dialect, params), name


def _execute_sql(stmt: DriverStatement, dialect: Any, params: Mapping[str, Any], name: str) -> str:
    c = stmt._compile(dialect, frozenset(params))
    args = stmt._args(c, params)
    return f"EXECUTE {name}(" + ", ".join(literal(a) for a in args) + ")"


async def _prepare(driver: Any, name: str) -> bool:
    """Outside a transaction: PREPARE the wanted statements this connection has not tried yet, each as its
    own query (one that fails, e.g. its table not migrated yet, stays a literal statement on this
    connection). True when `name` is prepared on it. These PREPAREs are not shown to the engine's
    before_cursor_execute listeners (once per connection, not part of any unit of work)."""
    tried = _PREPARED.get(driver)
    if tried is None:
        tried = _PREPARED.setdefault(driver, {})
    for wanted, text in list(_WANTED.items()):
        if wanted in tried:
            continue
        try:
            await driver.execute(f"PREPARE {wanted} AS {text}")
        except Exception:  # noqa: BLE001 - any refusal: the statement is sent with literals instead
            tried[wanted] = False
            continue
        tried[wanted] = True
    return tried.get(name, False)


def _simple_state(session: AsyncSession | LeanSession) -> tuple[Any, Any] | None:
    """The transaction's driver state when simple queries with literal values may be sent on it
    (PostgreSQL, a connection opened by `open_connection`, standard_conforming_strings on), else None."""
    cached: tuple[Any, Any] | None
    if type(session) is LeanSession:
        cached = session.state
    else:
        txn = session.sync_session.get_transaction()
        cached = _STATE.get(txn) if txn is not None else None
    if cached is None or cached[1].name != "postgresql":
        return None
    if getattr(cached[0][2].get_settings(), "standard_conforming_strings", None) != "on":
        return None
    return cached


def _begin_sql(adapted: Any) -> str:
    """The BEGIN asyncpg's Transaction.start sends for the adapter's settings."""
    sql = "BEGIN"
    level = adapted.isolation_level
    if level in ("read_committed", "read_uncommitted", "repeatable_read", "serializable"):
        sql += " ISOLATION LEVEL " + level.replace("_", " ").upper()
    if adapted.readonly:
        sql += " READ ONLY"
    if adapted.deferrable:
        sql += " DEFERRABLE"
    return sql


def _commit_listened(sync: Any, sync_conn: Any) -> bool:
    return bool(sync.dispatch.before_commit or sync.dispatch.after_commit or sync_conn.dispatch.commit)


def _before_cursor(
    sync_conn: Any, sql: str, stmt: DriverStatement, dialect: Any, params: Mapping[str, Any]
) -> None:
    """The engine's before_cursor_execute listeners see the statement (statement counts stay true): with
    its literal values where an EXECUTE of its prepared form is sent (the statement, not its name)."""
    if sync_conn._has_events or sync_conn.engine._has_events:
        if sql.startswith("EXECUTE "):
            sql = literal_sql(stmt, dialect, params)
        for fn in sync_conn.dispatch.before_cursor_execute:
            fn(sync_conn, None, sql, (), None, False)


def _translated(exc: Exception, sync_conn: Any, adapted: Any, dialect: Any, sql: str) -> BaseException:
    """asyncpg's error as the DBAPIError SQLAlchemy raises for it (other errors unchanged)."""
    orig: BaseException = exc
    try:
        adapted._handle_exception(exc)
    except Exception as translated:
        orig = translated
    if isinstance(orig, dialect.loaded_dbapi.Error):
        invalidated = dropped(sync_conn, adapted, dialect, orig)
        wrapped: BaseException = DBAPIError.instance(
            sql, (), orig, dialect.loaded_dbapi.Error, connection_invalidated=invalidated, dialect=dialect
        )
        return wrapped
    return exc
