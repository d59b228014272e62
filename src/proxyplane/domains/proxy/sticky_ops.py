"""Operations: session mode, sticky TTL and sticky sessions of a rotating service.

A sub-user's sticky sessions (issue 18) are listed with the service's, each with its ``subuser_id`` (null:
the service's own login); the list takes a ``subuser_id`` filter and deleting one takes the ``subuser_id``
it belongs to (a sid is unique per login, not per service). A purge ends the sub-users' sessions too."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from proxyplane.core.bounds import documented
from proxyplane.core.clock import utcnow
from proxyplane.core.errors import Conflict, declares
from proxyplane.domains.proxy import service as proxy
from proxyplane.domains.proxy.ops import BASE, READ, WRITE, ServiceRef, owned
from proxyplane.domains.services.ops import emit_changed
from proxyplane.domains.subusers import service as subusers
from proxyplane.ops import Context, Effect, Operation, register
from proxyplane.storage.models import Service
from proxyplane.storage.models.gateway import ProxySettings
from proxyplane.storage.models.gateway import StickySession as StickyRow

SID = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_]+$")


class SessionRef(BaseModel):
    service_id: uuid.UUID
    sid: str = SID


SUBUSER = Field(
    default=None,
    description="the sub-user whose session it is (issue 18); absent or null: the service's own login",
)


class SessionDelete(SessionRef):
    subuser_id: uuid.UUID | None = SUBUSER


class SubuserSticky(BaseModel):
    service_id: uuid.UUID
    subuser_id: uuid.UUID


class SubuserSession(SubuserSticky):
    sid: str = SID


class SessionsIn(BaseModel):
    service_id: uuid.UUID
    subuser_id: uuid.UUID | None = Field(
        default=None, description="only this sub-user's sessions; absent: the service's and its sub-users'"
    )


class StickySessionOut(BaseModel):
    sid: str
    exit_ip: str
    started_at: datetime
    expires_at: datetime
    ttl_minutes: int = Field(description="the session's lifetime (its username's -ttl-, else the service's)")
    expires_in_seconds: int = Field(description="seconds until expires_at, when read (0: ending now)")
    subuser_id: uuid.UUID | None = Field(
        default=None, description="the sub-user whose session it is; null: the service's own login"
    )


class StickySessionsOut(BaseModel):
    service_id: uuid.UUID
    sessions: list[StickySessionOut]


class PurgeOut(BaseModel):
    service_id: uuid.UUID
    purged: int = Field(description="live sessions ended")


class ModeIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    service_id: uuid.UUID
    mode: Literal["rotating", "sticky", "pinned"]
    pin: str | None = Field(
        default=None,
        description="exit IP (IPv6 services: an address inside the service's subnet); required for pinned, "
        "refused otherwise",
        json_schema_extra=documented(maxLength=45),
    )


class ModeOut(BaseModel):
    service_id: uuid.UUID
    mode: str
    pin: str | None
    ttl_minutes: int


class TtlIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    service_id: uuid.UUID
    ttl_minutes: int = Field(
        ge=1, le=proxy.TTL_MAX_MINUTES, description="1 to 1440 minutes (24 hours): the TTL of sessions whose "
        "username sets none (-ttl-30m, -ttl-24h set their own)"
    )


def session_out(row: StickyRow, public: dict[int, uuid.UUID] | None = None) -> StickySessionOut:
    pk, sid = proxy.split_sid(row.sid)
    return StickySessionOut(
        sid=sid,
        exit_ip=row.exit_ip,
        started_at=row.started_at,
        expires_at=row.expires_at,
        ttl_minutes=max(1, round((row.expires_at - row.started_at).total_seconds() / 60)),
        expires_in_seconds=max(0, int((row.expires_at - utcnow()).total_seconds())),
        subuser_id=None if pk is None or public is None else public.get(pk),
    )


async def subuser_pk(ctx: Context, svc: Service, subuser_id: uuid.UUID | None) -> int | None:
    """The internal id of the service's sub-user (404 when it is not this service's)."""
    if subuser_id is None:
        return None
    return (await subusers.get_owned(ctx.session, svc, subuser_id)).id


def mode_out(row: ProxySettings) -> ModeOut:
    return ModeOut(
        service_id=row.service_id,
        mode=row.session_mode,
        pin=row.pin,
        ttl_minutes=row.sticky_ttl_seconds // 60,
    )


async def list_sessions(ctx: Context, data: SessionsIn) -> StickySessionsOut:
    svc = await owned(ctx, data.service_id)
    proxy.require_rotating(svc)
    pk = await subuser_pk(ctx, svc, data.subuser_id)
    rows = await proxy.live_sessions(ctx.session, svc, subuser_pk=pk, every=pk is None)
    public = {}
    if any(":" in r.sid for r in rows):
        public = {s.id: s.subuser_id for s in await subusers.list_for_service(ctx.session, svc.service_id)}
    known = [r for r in rows if proxy.split_sid(r.sid)[0] in (None, *public)]  # not a deleted sub-user's
    return StickySessionsOut(service_id=svc.service_id, sessions=[session_out(r, public) for r in known])


async def rotate_session(ctx: Context, data: SessionRef) -> StickySessionOut:
    svc = await owned(ctx, data.service_id)
    row = await proxy.rotate_session(ctx.session, svc, data.sid)
    emit_changed(ctx, svc.service_id)
    return session_out(row)


async def end_session(ctx: Context, data: SessionDelete) -> None:
    svc = await owned(ctx, data.service_id)
    proxy.require_rotating(svc)
    await proxy.end_session(ctx.session, svc, data.sid, await subuser_pk(ctx, svc, data.subuser_id))
    emit_changed(ctx, svc.service_id)


async def purge(ctx: Context, data: ServiceRef) -> PurgeOut:
    svc = await owned(ctx, data.service_id)
    n = await proxy.purge_sessions(ctx.session, svc)
    emit_changed(ctx, svc.service_id)
    return PurgeOut(service_id=svc.service_id, purged=n)


async def rotate_subuser_session(ctx: Context, data: SubuserSession) -> StickySessionOut:
    svc = await owned(ctx, data.service_id)
    proxy.require_rotating(svc)
    sub = await subusers.get_owned(ctx.session, svc, data.subuser_id)
    row = await proxy.rotate_session(ctx.session, svc, data.sid, sub.id, sub.countries)
    emit_changed(ctx, svc.service_id)
    return session_out(row, {sub.id: sub.subuser_id})


async def purge_subuser(ctx: Context, data: SubuserSticky) -> PurgeOut:
    svc = await owned(ctx, data.service_id)
    proxy.require_rotating(svc)
    sub = await subusers.get_owned(ctx.session, svc, data.subuser_id)
    n = await proxy.purge_sessions(ctx.session, svc, sub.id)
    emit_changed(ctx, svc.service_id)
    return PurgeOut(service_id=svc.service_id, purged=n)


async def get_mode(ctx: Context, data: ServiceRef) -> ModeOut:
    svc = await owned(ctx, data.service_id)
    proxy.require_rotating(svc)
    return mode_out(await proxy.settings_row(ctx.session, svc))


async def put_mode(ctx: Context, data: ModeIn) -> ModeOut:
    svc = await owned(ctx, data.service_id)
    row = await proxy.set_mode(ctx.session, svc, data.mode, data.pin)
    emit_changed(ctx, svc.service_id)
    return mode_out(row)


async def put_ttl(ctx: Context, data: TtlIn) -> ModeOut:
    svc = await owned(ctx, data.service_id)
    row = await proxy.set_ttl(ctx.session, svc, data.ttl_minutes)
    emit_changed(ctx, svc.service_id)
    return mode_out(row)


STICKY = f"{BASE}/sticky"
SUBUSER_STICKY = "/customer/services/{service_id}/subusers/{subuser_id}/sticky"
TAGS = ("proxy",)
register(
    Operation(
        name="list_sticky_sessions",
        extra=declares(Conflict),
        summary="Live sticky sessions of a rotating service and its sub-users: sid, exit IP, started, "
        "expires, sub-user.",
        method="GET",
        path=f"{STICKY}/sessions",
        handler=list_sessions,
        input=SessionsIn,
        output=StickySessionsOut,
        scopes=READ,
        tags=TAGS,
    ),
    Operation(
        name="rotate_sticky_session",
        extra=declares(Conflict),
        summary="Give a sticky session a new exit IP (free; not an IP list refresh); its TTL restarts.",
        method="POST",
        path=f"{STICKY}/sessions/{{sid}}/rotate",
        handler=rotate_session,
        input=SessionRef,
        output=StickySessionOut,
        scopes=WRITE,
        effect=Effect.WRITE,
        tags=TAGS,
    ),
    Operation(
        name="delete_sticky_session",
        extra=declares(Conflict),
        summary="End one sticky session (its next use starts a new one); a sub-user's: with its subuser_id.",
        method="DELETE",
        path=f"{STICKY}/sessions/{{sid}}",
        handler=end_session,
        input=SessionDelete,
        output=None,
        scopes=WRITE,
        effect=Effect.WRITE,
        status_code=204,
        tags=TAGS,
    ),
    Operation(
        name="purge_sticky_sessions",
        extra=declares(Conflict),
        summary="End every sticky session of a rotating service (its sub-users' too).",
        method="POST",
        path=f"{STICKY}/purge",
        handler=purge,
        input=ServiceRef,
        output=PurgeOut,
        scopes=WRITE,
        effect=Effect.WRITE,
        tags=TAGS,
    ),
    Operation(
        name="rotate_subuser_sticky_session",
        extra=declares(Conflict),
        summary="Give a sub-user's sticky session a new exit IP (within its countries); its TTL restarts.",
        method="POST",
        path=f"{SUBUSER_STICKY}/sessions/{{sid}}/rotate",
        handler=rotate_subuser_session,
        input=SubuserSession,
        output=StickySessionOut,
        scopes=WRITE,
        effect=Effect.WRITE,
        tags=TAGS,
    ),
    Operation(
        name="purge_subuser_sticky_sessions",
        extra=declares(Conflict),
        summary="End every sticky session of one sub-user (the service's and other sub-users' stay).",
        method="POST",
        path=f"{SUBUSER_STICKY}/purge",
        handler=purge_subuser,
        input=SubuserSticky,
        output=PurgeOut,
        scopes=WRITE,
        effect=Effect.WRITE,
        tags=TAGS,
    ),
    Operation(
        name="get_sticky_mode",
        extra=declares(Conflict),
        summary="Session mode (rotating, sticky or pinned), pin and sticky TTL of a rotating service.",
        method="GET",
        path=f"{STICKY}/mode",
        handler=get_mode,
        input=ServiceRef,
        output=ModeOut,
        scopes=READ,
        tags=TAGS,
    ),
    Operation(
        name="set_sticky_mode",
        extra=declares(Conflict),
        summary="Set the session mode: rotating, sticky or pinned (pin, an exit IP, required for pinned).",
        method="PUT",
        path=f"{STICKY}/mode",
        handler=put_mode,
        input=ModeIn,
        output=ModeOut,
        scopes=WRITE,
        effect=Effect.WRITE,
        tags=TAGS,
    ),
    Operation(
        name="set_sticky_ttl",
        extra=declares(Conflict),
        summary="Set the sticky-session TTL: 1 minute to 24 hours (for sessions started afterwards).",
        method="PUT",
        path=f"{STICKY}/ttl",
        handler=put_ttl,
        input=TtlIn,
        output=ModeOut,
        scopes=WRITE,
        effect=Effect.WRITE,
        tags=TAGS,
    ),
)
