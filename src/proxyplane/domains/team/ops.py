"""Team members of an account (issue 34.5), declared once: REST under /customer/me/members,
/customer/me/invitations and /customer/me/activity, and the same MCP tools. Inviting, changing and
removing need the owner or admin role (an account's own API keys act as its holder, an owner); reading
needs customer:read."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

from proxyplane.core.bounds import EMAIL, INT32_MAX
from proxyplane.core.clock import utcnow
from proxyplane.core.errors import Conflict, declares
from proxyplane.core.scopes import Scope
from proxyplane.domains.accounts.service import get_customer
from proxyplane.domains.team import roles, service
from proxyplane.ops import Context, Effect, Operation, register
from proxyplane.storage.models.team import TeamInvitation
from proxyplane.storage.repos import team as repo

Role = Literal["owner", "admin", "billing", "developer", "viewer"]


class Member(BaseModel):
    member_id: int | None = Field(description="null for the account holder (always an owner)")
    email: str
    name: str
    role: Role
    holder: bool = Field(description="the account's own sign-in: always an owner, cannot be removed")
    two_factor: bool = Field(default=False, description="the member signs in with a second factor")
    joined_at: datetime
    invited_by: str = ""
    scopes: list[str] = Field(description="what the role allows (API-key scopes)")


class Invitation(BaseModel):
    invitation_id: int
    email: str
    role: Role
    invited_by: str
    created_at: datetime
    expires_at: datetime


class Members(BaseModel):
    items: list[Member]
    invitations: list[Invitation] = Field(description="open invitations (not accepted, not expired)")
    your_role: Role = Field(description="the caller's own role on this account")
    you_hold: bool = Field(default=False, description="the caller is the account's holder (may hand it over)")


class NewInvitation(BaseModel):
    email: str = Field(min_length=3, max_length=320, json_schema_extra=EMAIL)
    role: Role


class InvitationSent(Invitation):
    has_sign_in: bool = Field(description="the address already has a sign-in (the email asks it to accept)")


class InvitationRef(BaseModel):
    invitation_id: int = Field(ge=1, le=INT32_MAX)


class MemberRef(BaseModel):
    member_id: int = Field(ge=1, le=INT32_MAX)


class RoleChange(MemberRef):
    role: Role


class Removed(BaseModel):
    member_id: int
    keys_revoked: int = Field(description="the member's API keys that stopped working")


class HandOver(MemberRef):
    revoke_own_keys: bool = Field(
        default=False,
        description="also revoke the API keys the account's own sign-in made (they keep working otherwise)",
    )


class HandedOver(BaseModel):
    member_id: int = Field(description="the account's holder now")
    sessions_ended: int = Field(description="dashboard sessions of the account's own sign-in that ended")
    keys_revoked: int
    keys_kept: int = Field(description="API keys of the account's own sign-in still working")


class Left(BaseModel):
    keys_revoked: int = Field(description="your API keys on this account that stopped working")


class ActivityQuery(BaseModel):
    offset: int = Field(default=0, ge=0, le=INT32_MAX)
    limit: int = Field(default=50, ge=1, le=200)
    member_id: int | None = Field(default=None, ge=1, le=INT32_MAX, description="only this member's")


class ActivityItem(BaseModel):
    time: datetime
    actor: str = Field(description="who: the member's email, or the holder's")
    member_id: int | None
    action: str = Field(description="the operation (or member.*) that was done")
    detail: str
    channel: str = Field(description="web (dashboard), rest, mcp or legacy")
    client_ip: str


class Activity(BaseModel):
    items: list[ActivityItem]
    offset: int
    limit: int
    total: int


def _invitation(row: TeamInvitation) -> Invitation:
    return Invitation(
        invitation_id=row.id,
        email=row.email,
        role=row.role,  # type: ignore[arg-type]
        invited_by=row.invited_by,
        created_at=row.created_at,
        expires_at=row.expires_at,
    )


async def list_members(ctx: Context, _: None) -> Members:
    from proxyplane.domains.accounts.two_factor import enabled

    your_role, _row = await service.caller_role(ctx)
    account = await get_customer(ctx.session, ctx.customer_id)
    items = []
    if account.holder_member_id is None:  # the account's own sign-in holds it (handed over: a member does)
        items.append(
            Member(
                member_id=None,
                email=account.email,
                name=account.name,
                role="owner",
                holder=True,
                two_factor=await enabled(ctx.session, account.id) is not None,
                joined_at=account.created_at,
                scopes=sorted(roles.scopes_of("owner")),
            )
        )
    for m, person in await repo.members(ctx.session, account.id):
        holds = m.id == account.holder_member_id
        member = Member(
            member_id=m.id,
            email=person.email,
            name=person.name,
            role=m.role,  # type: ignore[arg-type]
            holder=holds,
            two_factor=await enabled(ctx.session, person.id) is not None,
            joined_at=m.created_at,
            invited_by=m.invited_by,
            scopes=sorted(roles.scopes_of(m.role)),
        )
        if holds:
            items.insert(0, member)
        else:
            items.append(member)
    open_ = await repo.open_invitations(ctx.session, account.id, utcnow())
    return Members(
        items=items,
        invitations=[_invitation(i) for i in open_],
        your_role=your_role,  # type: ignore[arg-type]
        you_hold=ctx.caller.member_id == account.holder_member_id,
    )


async def invite_member(ctx: Context, data: NewInvitation) -> InvitationSent:
    row, has_sign_in = await service.invite(ctx, data.email, data.role)
    return InvitationSent(**_invitation(row).model_dump(), has_sign_in=has_sign_in)


async def revoke_invitation(ctx: Context, data: InvitationRef) -> Members:
    await service.revoke_invitation(ctx, data.invitation_id)
    return await list_members(ctx, None)


async def change_member_role(ctx: Context, data: RoleChange) -> Members:
    await service.change_role(ctx, data.member_id, data.role)
    return await list_members(ctx, None)


async def remove_member(ctx: Context, data: MemberRef) -> Removed:
    return Removed(member_id=data.member_id, keys_revoked=await service.remove(ctx, data.member_id))


async def hand_over_account(ctx: Context, data: HandOver) -> HandedOver:
    from proxyplane.domains.team.handover import hand_over

    done = await hand_over(ctx, data.member_id, data.revoke_own_keys)
    return HandedOver(
        member_id=done.member_id,
        sessions_ended=done.sessions_ended,
        keys_revoked=done.keys_revoked,
        keys_kept=done.keys_kept,
    )


async def leave_account(ctx: Context, _: None) -> Left:
    return Left(keys_revoked=await service.leave(ctx))


async def get_activity(ctx: Context, q: ActivityQuery) -> Activity:
    rows, total = await repo.activity(ctx.session, ctx.customer_id, q.offset, q.limit, q.member_id)
    account = await get_customer(ctx.session, ctx.customer_id)
    emails = {m.id: p.email for m, p in await repo.members(ctx.session, account.id, removed_too=True)}
    items = [
        ActivityItem(
            time=r.created_at,
            actor=(emails.get(r.member_id, r.actor) if r.member_id is not None else account.email),
            member_id=r.member_id,
            action=r.action,
            detail=r.detail,
            channel=r.channel,
            client_ip=r.client_ip,
        )
        for r in rows
    ]
    return Activity(items=items, offset=q.offset, limit=q.limit, total=total)


READ = frozenset({Scope.customer_read})
WRITE = frozenset({Scope.customer_write})
LIST_MEMBERS = Operation(
    name="list_members",
    summary="The people who act on this account (the holder first), their roles, and open invitations.",
    method="GET",
    path="/customer/me/members",
    handler=list_members,
    output=Members,
    scopes=READ,
    tags=("team",),
)
INVITE_MEMBER = Operation(
    name="invite_member",
    summary="Invite someone by email to act on this account with a role (owner, admin, billing, developer, "
    "viewer); the emailed link works once, for 7 days. Owner or admin only.",
    method="POST",
    path="/customer/me/invitations",
    handler=invite_member,
    input=NewInvitation,
    output=InvitationSent,
    scopes=WRITE,
    effect=Effect.WRITE,
    status_code=201,
    tags=("team",),
    extra=declares(Conflict),  # the holder's own address, a member already, the hourly cap
)
REVOKE_INVITATION = Operation(
    name="revoke_invitation",
    summary="Withdraw an open invitation (its link stops working). Owner or admin only.",
    method="DELETE",
    path="/customer/me/invitations/{invitation_id}",
    handler=revoke_invitation,
    input=InvitationRef,
    output=Members,
    scopes=WRITE,
    effect=Effect.WRITE,
    tags=("team",),
)
CHANGE_ROLE = Operation(
    name="change_member_role",
    summary="Give a member another role; their API keys lose any scope the new role lacks. Owner or admin "
    "only (an admin cannot change or make an owner; the account holder is always an owner).",
    method="PATCH",
    path="/customer/me/members/{member_id}",
    handler=change_member_role,
    input=RoleChange,
    output=Members,
    scopes=WRITE,
    effect=Effect.WRITE,
    tags=("team",),
)
REMOVE_MEMBER = Operation(
    name="remove_member",
    summary="Remove a member: their dashboard sessions on this account end and the API keys they created "
    "stop working at once. Owner or admin only; the account holder (the last owner) cannot be removed.",
    method="DELETE",
    path="/customer/me/members/{member_id}",
    handler=remove_member,
    input=MemberRef,
    output=Removed,
    scopes=WRITE,
    effect=Effect.WRITE,
    tags=("team",),
)
GET_ACTIVITY = Operation(
    name="get_account_activity",
    summary="Who did what on this account, newest first: the member (or holder), the action, the door "
    "and address: every write on every door (the holder's keys too), dashboard sign-ins, member changes.",
    method="GET",
    path="/customer/me/activity",
    handler=get_activity,
    input=ActivityQuery,
    output=Activity,
    scopes=READ,
    tags=("team",),
)
LEAVE = Operation(
    name="leave_account",
    summary="Leave this team account (a member, any role): your API keys on it stop working and your "
    "browsers go back to your own account. The account holder cannot leave.",
    method="POST",
    path="/customer/me/membership/leave",
    handler=leave_account,
    output=Left,
    scopes=READ,
    effect=Effect.WRITE,
    tags=("team",),
    extra=declares(Conflict),  # the holder
)
HAND_OVER = Operation(
    name="hand_over_account",
    summary="Hand this account over to a member, who becomes its holder (an owner nobody can remove). The "
    "first time, the account's own sign-in is closed (password, app passwords, sessions); its API keys keep "
    "working unless revoke_own_keys. Only the current holder.",
    method="POST",
    path="/customer/me/members/{member_id}/hand-over",
    handler=hand_over_account,
    input=HandOver,
    output=HandedOver,
    scopes=WRITE,
    effect=Effect.WRITE,
    tags=("team",),
    extra=declares(Conflict),  # revoke_own_keys after the own sign-in was handed over already
)
register(
    LIST_MEMBERS, INVITE_MEMBER, REVOKE_INVITATION, CHANGE_ROLE, REMOVE_MEMBER, GET_ACTIVITY, LEAVE, HAND_OVER
)
