"""Canaries (issue 31): the private internals of the libraries ProxyPlane leans on are still where the code
expects them. pyproject.toml bounds each library below its next minor version; when a bound is raised,
these fail first if an internal moved (storage/driver.py, storage/transaction.py, storage/sqlite_driver.py,
adapters/rest/route_table.py, adapters/mcp/shared_sessions.py, cli/http_writes.py,
domains/orders/service.py)."""

from __future__ import annotations

import inspect
from typing import Any


def _source(cls: type) -> str:
    """The source of `cls` and of its bases (where attributes set in __init__ are named)."""
    parts = []
    for klass in cls.__mro__:
        try:
            parts.append(inspect.getsource(klass))
        except (OSError, TypeError):
            continue
    return "\n".join(parts)


def _has(cls: type, *names: str) -> list[str]:
    """The names neither on the class nor assigned as `self.<name>` in its (or its bases') source."""
    text = _source(cls)
    return [n for n in names if not hasattr(cls, n) and f"self.{n} " not in text and f"self.{n}:" not in text]


def test_sqlalchemy_asyncpg_adapter_internals() -> None:
    """storage/driver.py and storage/transaction.py run statements on the adapter's asyncpg connection."""
    from sqlalchemy.dialects.postgresql.asyncpg import AsyncAdapt_asyncpg_connection

    missing = _has(
        AsyncAdapt_asyncpg_connection,
        "_execute_mutex",
        "_transaction",
        "_start_transaction",
        "_handle_exception",
        "isolation_level",
        "readonly",
        "deferrable",
    )
    assert missing == []


def test_sqlalchemy_compiler_connection_and_orm_internals() -> None:
    """DriverStatement compiles once and applies the compiler's bind processors; before_cursor_execute
    listeners are found by `_has_events`; the order's Service is made by the class manager."""
    from sqlalchemy import column, select
    from sqlalchemy.dialects import postgresql
    from sqlalchemy.engine import Connection, Engine
    from sqlalchemy.util.concurrency import await_, greenlet_spawn, in_greenlet

    from proxyplane.storage.models import Service

    compiled: Any = select(column("x")).compile(dialect=postgresql.dialect())  # type: ignore[no-untyped-call]
    assert isinstance(compiled._bind_processors, dict)
    assert hasattr(compiled, "positiontup") and hasattr(compiled, "binds")
    assert _has(Connection, "_has_events", "dispatch") == [] and _has(Engine, "_has_events") == []
    assert callable(Service.__mapper__.class_manager.new_instance)
    assert all(callable(f) for f in (await_, greenlet_spawn, in_greenlet))


def test_sqlalchemy_aiosqlite_adapter_and_aiosqlite_internals() -> None:
    """storage/sqlite_driver.py subclasses SQLAlchemy's aiosqlite adapter (its close and the two halves of
    its terminate) and reaches into aiosqlite's Connection (its job queue `_tx`, the sqlite3 connection
    `_conn`, `_execute`, `stop`: the one stop its closes queue)."""
    import aiosqlite
    from sqlalchemy.dialects.sqlite.aiosqlite import (
        AsyncAdapt_aiosqlite_connection,
        AsyncAdapt_aiosqlite_cursor,
    )

    assert _has(AsyncAdapt_aiosqlite_connection, "_connection", "_execute_mutex", "_handle_exception") == []
    assert _has(AsyncAdapt_aiosqlite_connection, "_terminate_graceful_close", "_terminate_force_close") == []
    assert _has(AsyncAdapt_aiosqlite_cursor, "_adapt_connection", "_cursor") == []
    assert _has(aiosqlite.Connection, "_tx", "_conn", "_execute", "stop", "_thread") == []


def test_asyncpg_connection_internals() -> None:
    """transaction.begin_with reads the connection's settings; `_Begun` stands where asyncpg's Transaction
    sits in the adapter."""
    import asyncpg
    from asyncpg.transaction import Transaction

    assert _has(asyncpg.Connection, "get_settings", "execute", "fetch", "executemany") == []
    assert _has(Transaction, "commit", "rollback") == []


def test_fastapi_and_starlette_routing_internals() -> None:
    """adapters/rest/route_table.py dispatches by a table and then does what FastAPI's router does."""
    from fastapi import routing
    from fastapi.telemetry._api import _route_selected
    from starlette._utils import get_route_path
    from starlette.routing import Match, Mount

    assert routing._route_selected is _route_selected and callable(routing._update_scope)
    assert callable(routing.serialize_response) and callable(get_route_path)
    assert Match.FULL and Mount


def test_uvicorn_httptools_protocol_internals() -> None:
    """cli/http_writes.py subclasses uvicorn's httptools protocol and swaps its `transport`."""
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    assert _has(HttpToolsProtocol, "transport", "loop", "connection_made") == []


def test_mcp_session_manager_and_dispatcher_internals() -> None:
    """adapters/mcp/shared_sessions.py subclasses the SDK's session manager (a session restored from the
    store joins its table of transports under its lock) and its JSON-RPC dispatcher (own request ids)."""
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
    from mcp.shared.jsonrpc_dispatcher import JSONRPCDispatcher

    missing = _has(
        StreamableHTTPSessionManager,
        "_handle_stateful_request",
        "_discard_session",
        "_lifespan_state",
        "_server_instances",
        "_session_creation_lock",
        "_session_owners",
        "_task_group",
    )
    assert missing == []
    assert callable(JSONRPCDispatcher._allocate_id)
