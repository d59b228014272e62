"""MCP state shared by the API processes (issue 35.3): the operations of the MCP transport's own door
(`mcp_transport`: adapters/mcp/shared_sessions.py and relay.py run them; never REST, MCP tools or the
dashboard). A 2025-11-25 session opened on one process is recorded with what its `initialize` negotiated,
so any process can serve its next request; the relay carries what one process must tell the others (a
client's answer to a question another process asked, a session ended, an account's listen event)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from pydantic import BaseModel, Field

from proxyplane.core.clock import utcnow
from proxyplane.ops import Auth, Context, Effect, Operation, register
from proxyplane.storage.repos import mcp_sessions as repo

MCP_TRANSPORT = frozenset({"mcp_transport"})
RELAY_KEPT = timedelta(seconds=60)  # a relayed message is read within a poll (0.2 s) or never


class SessionOpened(BaseModel):
    session_id: str = Field(max_length=64)
    owner: str = Field(max_length=64)
    customer_id: int | None = None
    protocol_version: str = Field(max_length=40)
    client: dict[str, Any]


class SessionRef(BaseModel):
    session_id: str = Field(max_length=64)
    idle_seconds: float = 600.0
    origin: str = Field(default="", max_length=40)


class SessionFound(BaseModel):
    found: bool
    owner: str = ""
    customer_id: int | None = None
    protocol_version: str = ""
    client: dict[str, Any] = Field(default_factory=dict)


class RelayMessage(BaseModel):
    id: int = 0
    kind: str = Field(max_length=16)
    target: str = Field(max_length=64)
    origin: str = Field(max_length=40)
    body: Any = None


class RelayRead(BaseModel):
    after_id: int = -1  # -1: nothing, only the last id (where a new process starts reading)
    missing: list[int] = Field(default_factory=list, max_length=1000)  # ids skipped by earlier reads


class RelayBatch(BaseModel):
    messages: list[RelayMessage]
    last_id: int


class Prune(BaseModel):
    idle_seconds: float = 600.0


async def open_session(ctx: Context, data: SessionOpened) -> None:
    now = utcnow()
    await repo.add_session(ctx.session, {**data.model_dump(), "created_at": now, "seen_at": now})


async def find_session(ctx: Context, data: SessionRef) -> SessionFound:
    row = await repo.live_session(
        ctx.session, data.session_id, utcnow() - timedelta(seconds=data.idle_seconds)
    )
    if row is None:
        return SessionFound(found=False)
    return SessionFound(
        found=True,
        owner=row.owner,
        customer_id=row.customer_id,
        protocol_version=row.protocol_version,
        client=row.client,
    )


async def touch_session(ctx: Context, data: SessionRef) -> None:
    await repo.touch(ctx.session, data.session_id, utcnow())


async def end_session(ctx: Context, data: SessionRef) -> None:
    """The client ended it (DELETE): gone from the store, and every process drops its copy."""
    await repo.end_session(ctx.session, data.session_id)
    await repo.relay(ctx.session, "closed", data.session_id, data.origin, {}, utcnow())


async def send(ctx: Context, data: RelayMessage) -> None:
    await repo.relay(ctx.session, data.kind, data.target, data.origin, data.body, utcnow())


async def read(ctx: Context, data: RelayRead) -> RelayBatch:
    if data.after_id < 0:
        return RelayBatch(messages=[], last_id=await repo.last_relay_id(ctx.session))
    late = await repo.relayed_among(ctx.session, data.missing)
    rows = await repo.relayed_after(ctx.session, data.after_id)
    last_id = max([data.after_id, *(r.id for r in rows)])
    messages = [
        RelayMessage(id=r.id, kind=r.kind, target=r.target, origin=r.origin, body=r.body) for r in late + rows
    ]
    return RelayBatch(messages=messages, last_id=last_id)


async def prune(ctx: Context, data: Prune) -> None:
    now = utcnow()
    await repo.prune_relay(ctx.session, now - RELAY_KEPT)
    await repo.prune_sessions(ctx.session, now - timedelta(seconds=data.idle_seconds) - RELAY_KEPT)


def _op(
    name: str, summary: str, handler: Any, input: type[BaseModel], output: Any, effect: Effect
) -> Operation:
    return Operation(
        name=f"mcp_{name}",
        summary=f"MCP transport: {summary}",
        method="GET" if effect == Effect.READ else "POST",
        path=f"/mcp/{name}",
        handler=handler,
        input=input,
        output=output,
        effect=effect,
        auth=Auth.NONE,  # the key gate authenticated the request; the owner is in the input
        mcp=False,
        doors=MCP_TRANSPORT,
    )


OPEN = _op("session_open", "record a new session", open_session, SessionOpened, None, Effect.WRITE)
FIND = _op("session_find", "a live session by id", find_session, SessionRef, SessionFound, Effect.READ)
TOUCH = _op("session_touch", "a session was used", touch_session, SessionRef, None, Effect.WRITE)
END = _op("session_end", "a session ended by its client", end_session, SessionRef, None, Effect.WRITE)
SEND = _op("relay_send", "a message for the other API processes", send, RelayMessage, None, Effect.WRITE)
READ = _op("relay_read", "the messages after an id", read, RelayRead, RelayBatch, Effect.READ)
PRUNE = _op("relay_prune", "drop old messages and ended sessions", prune, Prune, None, Effect.WRITE)

register(OPEN, FIND, TOUCH, END, SEND, READ, PRUNE)
