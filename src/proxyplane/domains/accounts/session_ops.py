"""The customer's signed-in dashboard sessions (issue 34): list them (device, address, last seen) and
sign any one out (its cookie stops working at once)."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field
from sqlalchemy import select

from proxyplane.core.clock import utcnow
from proxyplane.core.errors import NotFound
from proxyplane.domains.accounts.web_ops import end_sessions
from proxyplane.ops import Context, Effect, Operation, register, web_op
from proxyplane.storage.models import WebSession


class SessionsQuery(BaseModel):
    current: str = Field(default="", max_length=64, description="the asking browser's session id")


class SessionInfo(BaseModel):
    ref: str = Field(description="a short reference to the session (not its secret)")
    user_agent: str
    client_ip: str
    created_at: datetime
    last_seen_at: datetime
    current: bool


class Sessions(BaseModel):
    items: list[SessionInfo]


class EndSession(BaseModel):
    ref: str = Field(min_length=8, max_length=64)


def ref_of(session_id: str) -> str:
    """The first 16 hex digits of the record id (itself a hash of the cookie's token)."""
    return session_id[:16]


async def _live(ctx: Context) -> list[WebSession]:
    rows = await ctx.session.execute(
        select(WebSession)
        .where(
            WebSession.customer_id == ctx.customer_id,
            WebSession.revoked_at.is_(None),
            WebSession.expires_at > utcnow(),
        )
        .order_by(WebSession.last_seen_at.desc())
    )
    return list(rows.scalars())


async def list_sessions(ctx: Context, q: SessionsQuery) -> Sessions:
    return Sessions(
        items=[
            SessionInfo(
                ref=ref_of(s.id),
                user_agent=s.user_agent,
                client_ip=s.client_ip,
                created_at=s.created_at,
                last_seen_at=s.last_seen_at,
                current=s.id == q.current,
            )
            for s in await _live(ctx)
        ]
    )


async def end_session(ctx: Context, data: EndSession) -> Sessions:
    found = [s for s in await _live(ctx) if ref_of(s.id) == data.ref]
    if not found:
        raise NotFound("no such signed-in session (it may have ended already)")
    await end_sessions(ctx.session, ctx.customer_id, only=found[0].id)
    return await list_sessions(ctx, SessionsQuery())


def _op(name: str, handler: object, input: type[BaseModel], effect: Effect) -> Operation:
    return web_op(name, handler, input, Sessions, effect=effect)


LIST_SESSIONS = _op("list_sessions", list_sessions, SessionsQuery, Effect.READ)
END_SESSION = _op("end_session", end_session, EndSession, Effect.WRITE)
register(LIST_SESSIONS, END_SESSION)
