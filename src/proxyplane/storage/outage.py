"""Is this exception the store being unreachable (issue 35)? One answer for every door.

A refused or reset connection, a connect or pool timeout, a server shutting down or in recovery, a
connection the pool found broken: the request did not happen (or was rolled back with its transaction),
so the caller may retry it later; doors answer 503 with Retry-After instead of a bare 500.
"""

from __future__ import annotations

import errno
import sqlite3

import asyncpg
from sqlalchemy.exc import DBAPIError
from sqlalchemy.exc import TimeoutError as PoolTimeout

RETRY_AFTER_SECONDS = 2
FULL_RETRY_AFTER_SECONDS = 60  # a full disk is freed by an operator, not in two seconds

# PostgreSQL SQLSTATE classes/codes that mean "not now": 08 connection exceptions, 57P01-57P03 admin
# shutdown / crash shutdown / cannot connect now
_STATES = ("08", "57P01", "57P02", "57P03")


def is_outage(exc: BaseException) -> bool:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if _one(current):
            return True
        current = current.__cause__ or current.__context__
    return False


def _one(exc: BaseException) -> bool:
    if isinstance(exc, PoolTimeout | ConnectionError | TimeoutError):
        return True
    if isinstance(exc, OSError) and exc.errno is not None:  # connect(): refused, unreachable
        return True
    if isinstance(exc, DBAPIError) and exc.connection_invalidated:
        return True
    if isinstance(exc, asyncpg.PostgresConnectionError | asyncpg.InterfaceError):
        return True
    state = getattr(exc, "sqlstate", None) or getattr(exc, "pgcode", None)
    return isinstance(state, str) and state.startswith(_STATES)


def stale_connection(exc: BaseException) -> bool:
    """A connection of the pool that was found dead in use (the store restarted, or the link was cut, since
    it was opened): SQLAlchemy has invalidated it (and the pool's older connections), so a new checkout
    connects afresh. Not a failed connect: a store still down fails again at once."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, DBAPIError) and current.connection_invalidated:
            return True
        current = current.__cause__ or current.__context__
    return False


def is_store_full(exc: BaseException) -> bool:
    """The store's disk (or quota) is full: SQLite's SQLITE_FULL, ENOSPC/EDQUOT, PostgreSQL's 53100
    disk_full. The statement failed and its transaction was rolled back: nothing was written; doors answer
    507 with Retry-After (reads still work; writes resume once space is freed)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, sqlite3.Error) and (
            getattr(current, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL
            or "database or disk is full" in str(current)
        ):
            return True
        if isinstance(current, OSError) and current.errno in (errno.ENOSPC, errno.EDQUOT):
            return True
        if (getattr(current, "sqlstate", None) or getattr(current, "pgcode", None)) == "53100":
            return True
        current = current.__cause__ or current.__context__
    return False
