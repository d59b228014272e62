"""Team accounts (issue 34.5): invite by email, accept, change roles, remove; who the caller is on the
account. Decisions: docs/decisions/team-accounts.md."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.core.clock import as_utc, utcnow
from proxyplane.core.errors import Conflict, Forbidden, NotFound, ValidationFailed
from proxyplane.domains.accounts.service import find_by_email, get_customer, normalise_email
from proxyplane.domains.apikeys.cache import drop_everywhere
from proxyplane.domains.apikeys.service import revoke_key
from proxyplane.domains.events.service import emit
from proxyplane.domains.mail.compose import render
from proxyplane.domains.mail.outbox import queue
from proxyplane.domains.team import mails, roles
from proxyplane.domains.team.activity import note_action
from proxyplane.ops import Caller, Context
from proxyplane.platform import Platform
from proxyplane.storage.models import Customer
from proxyplane.storage.models.team import TeamInvitation, TeamMember
from proxyplane.storage.repos import team as repo

INVITATION_LIFETIME = timedelta(days=7)
MAX_INVITATIONS_PER_HOUR = 20  # per account


@dataclass(frozen=True)
class Acting:
    """A signed-in person acting on a team account through one membership."""

    member_id: int
    account_id: int
    role: str
    account_email: str


async def acting(session: AsyncSession, member_id: int, person_id: int) -> Acting | None:
    """The membership a dashboard session acts through, if it is still current (removed: None)."""
    row = await repo.member(session, member_id)
    if row is None or row.removed_at is not None or row.person_id != person_id:
        return None
    account = await get_customer(session, row.account_id)
    if account.status != "active":
        return None
    return Acting(member_id=row.id, account_id=row.account_id, role=row.role, account_email=account.email)


async def caller_role(ctx: Context) -> tuple[str, TeamMember | None]:
    """The caller's role on the account: the holder (no member) is an owner."""
    if ctx.caller.member_id is None:
        return "owner", None
    row = await repo.member(ctx.session, ctx.caller.member_id)
    if row is None or row.removed_at is not None or row.account_id != ctx.customer_id:
        raise Forbidden("you are no longer a member of this account")
    return row.role, row


async def require_manager(ctx: Context) -> tuple[str, TeamMember | None]:
    role, row = await caller_role(ctx)
    if role not in roles.MANAGERS:
        raise Forbidden(f"the {role} role cannot manage members (owner or admin can)", role=role)
    return role, row


def check_role(role: str) -> str:
    if role not in roles.ROLE_SCOPES:
        raise ValidationFailed(f"role must be one of {', '.join(roles.ROLES)}", field="role")
    return role


async def invite(ctx: Context, email: str, role: str) -> tuple[TeamInvitation, bool]:
    """Invite an address with a role; the link goes through the outbox. Returns the invitation and whether
    the address already has a sign-in (its email asks it to sign in and accept)."""
    manager, me = await require_manager(ctx)
    role, email = check_role(role), normalise_email(email)
    if not roles.may_grant(manager, role):
        raise Forbidden("only an owner can invite an owner", field="role")
    account = await get_customer(ctx.session, ctx.customer_id)
    if email == account.email.lower():
        raise Conflict("that address is the account holder's own", field="email")
    existing = await find_by_email(ctx.session, email)
    if existing is not None:
        current = await repo.member_by_person(ctx.session, account.id, existing.id)
        if current is not None and current.removed_at is None:
            raise Conflict(f"{email} is already a member ({current.role})", field="email")
    now = utcnow()
    if (
        await repo.invitations_since(ctx.session, account.id, now - timedelta(hours=1))
        >= MAX_INVITATIONS_PER_HOUR
    ):
        raise Conflict(f"at most {MAX_INVITATIONS_PER_HOUR} invitations an hour; try again later")
    # a member's own address (also through a member's API key, whose caller names nobody): the invitation
    # is theirs, and is withdrawn when they lose the right to invite (_withdraw_invitations)
    by = (await get_customer(ctx.session, me.person_id)).email if me is not None else account.email
    row, raw = await repo.invite(ctx.session, account.id, email, role, by, now, now + INVITATION_LIFETIME)
    await _send(ctx.platform, ctx.session, row, raw, account.name or account.email, existing is not None)
    await note_action(
        ctx.session, account.id, ctx.caller.member_id, ctx.caller, "member.invited", f"{email} as {role}"
    )
    return row, existing is not None


async def _send(
    platform: Platform, session: AsyncSession, row: TeamInvitation, raw: str, account: str, has_sign_in: bool
) -> None:
    url = f"{platform.settings.base_url()}/team/accept/{raw}"
    first = f"{row.invited_by} invites you to act on the ProxyPlane account {account} as {row.role}."
    then = (
        "You already have a ProxyPlane sign-in with this address: sign in and accept the invitation."
        if has_sign_in
        else "Create your own sign-in with this address (your own password, and two-factor if you like), "
        "then accept the invitation."
    )
    mail = render(
        "link",
        "team_invitation",
        row.email,
        f"Invitation to the ProxyPlane account {account}",
        lines=[first, then],
        action_url=url,
        action_label="See the invitation",
        expires="This link works once, for 7 days.",
    )
    await queue(session, mail, sender=platform.settings.mail_from, customer_id=row.account_id)


def invitation_state(row: TeamInvitation | None) -> str:
    """ok | used | revoked | expired | unknown"""
    if row is None:
        return "unknown"
    if row.accepted_at is not None:
        return "used"
    if row.revoked_at is not None:
        return "revoked"
    if as_utc(row.expires_at) <= utcnow():
        return "expired"
    return "ok"


async def accept(
    session: AsyncSession, caller: Caller, raw: str, session_id: str, platform: Platform
) -> tuple[str, TeamMember | None]:
    """The signed-in person (caller.customer_id) accepts: their address must be the invited one. The
    browser's session then acts through the new membership."""
    assert caller.customer_id is not None
    row = await repo.invitation_by_token(session, raw) if raw else None
    state = invitation_state(row)
    if state != "ok" or row is None:
        return state, None
    person = await get_customer(session, caller.customer_id)
    if person.email.lower() != row.email.lower():
        return "other_address", None
    if person.id == row.account_id:
        return "own_account", None
    now = utcnow()
    if not await repo.accept(session, row.id, now):
        return "used", None
    joined = await repo.join(session, row.account_id, person.id, row.role, row.invited_by, now)
    await repo.act_as(session, session_id, person.id, joined.id)
    await note_action(
        session, row.account_id, joined.id, caller, "member.joined", f"{person.email} as {row.role}"
    )
    await emit(session, row.account_id, "member.joined", _about(joined, person.email))
    account = await get_customer(session, row.account_id)
    await mails.tell(
        platform,
        session,
        account.id,
        await mails.address(session, account),
        f"{person.email} joined your ProxyPlane account as {row.role}",
        [
            f"{person.email} accepted the invitation of {row.invited_by} and now acts on {account.email} as "
            f"{row.role}, with their own sign-in."
        ],
    )
    return "ok", joined


async def switch(
    session: AsyncSession, caller: Caller, session_id: str, member_id: int | None
) -> Acting | None:
    """Act on a team account (member_id) or on one's own (None) in this browser."""
    assert caller.customer_id is not None
    found = None
    if member_id is not None:
        found = await acting(session, member_id, caller.customer_id)
        if found is None:
            raise NotFound("you are not a member of that account")
    if not await repo.act_as(session, session_id, caller.customer_id, member_id):
        raise NotFound("this browser's session has ended")
    if found is not None:
        await note_action(session, found.account_id, found.member_id, caller, "member.signed_in", "")
    return found


async def target(ctx: Context, member_id: int) -> TeamMember:
    row = await repo.member(ctx.session, member_id)
    if row is None or row.account_id != ctx.customer_id or row.removed_at is not None:
        raise NotFound(f"member {member_id} not found")
    return row


async def _not_holder(ctx: Context, row: TeamMember, what: str) -> None:
    """The member the account was handed over to stays its owner (it can hand it on, not be dropped)."""
    account = await get_customer(ctx.session, row.account_id)
    if account.holder_member_id == row.id:
        raise Forbidden(f"the account's holder cannot {what}; the holder can hand the account over first")


async def change_role(ctx: Context, member_id: int, role: str) -> TeamMember:
    manager, _ = await require_manager(ctx)
    role = check_role(role)
    row = await target(ctx, member_id)
    if not roles.may_grant(manager, role) or not roles.may_grant(manager, row.role):
        raise Forbidden("only an owner can change an owner or make one", field="role")
    await _not_holder(ctx, row, "be given another role")
    before = row.role
    await repo.set_role(ctx.session, row, role, utcnow())
    if role not in roles.MANAGERS:
        await _withdraw_invitations(ctx, row)
    allowed = roles.scopes_of(role)
    for key in await repo.member_keys(ctx.session, ctx.customer_id, row.id):  # never beyond the role
        kept = sorted(s for s in key.scopes if s in allowed)
        if kept != sorted(key.scopes):
            if kept:
                await repo.narrow_key(ctx.session, key, kept)
                drop_everywhere(key.id)
            else:
                await revoke_key(ctx.session, ctx.customer_id, key.id)
    await note_action(
        ctx.session,
        ctx.customer_id,
        ctx.caller.member_id,
        ctx.caller,
        "member.role_changed",
        f"member {row.id}: {before} -> {role}",
    )
    account, person = await _people(ctx, row)
    if role != before:
        await emit(
            ctx.session, account.id, "member.role_changed", {**_about(row, person.email), "before": before}
        )
        await mails.tell(
            ctx.platform,
            ctx.session,
            account.id,
            person.email,
            f"Your role on the ProxyPlane account {account.email} is now {role}",
            [
                f"{ctx.caller.actor or account.email} changed your role on {account.email} from {before} to "
                f"{role}.",
                "Your API keys on the account keep only what the new role allows.",
            ],
        )
    return row


async def remove(ctx: Context, member_id: int) -> int:
    """Remove a member: their dashboard sessions on the account end and the API keys they made are revoked.
    Returns how many keys were revoked."""
    manager, _ = await require_manager(ctx)
    row = await target(ctx, member_id)
    if row.role == "owner" and manager != "owner":
        raise Forbidden("only an owner can remove an owner")
    await _not_holder(ctx, row, "be removed")
    now = utcnow()
    await repo.remove(ctx.session, row, now)
    await repo.end_member_sessions(ctx.session, row.id, now)
    await _withdraw_invitations(ctx, row)
    keys = await repo.member_keys(ctx.session, ctx.customer_id, row.id)
    for key in keys:
        await revoke_key(ctx.session, ctx.customer_id, key.id)
    await note_action(
        ctx.session,
        ctx.customer_id,
        ctx.caller.member_id,
        ctx.caller,
        "member.removed",
        f"member {row.id} ({len(keys)} keys revoked)",
    )
    account, person = await _people(ctx, row)
    await emit(
        ctx.session, account.id, "member.removed", {**_about(row, person.email), "keys_revoked": len(keys)}
    )
    await mails.tell(
        ctx.platform,
        ctx.session,
        account.id,
        person.email,
        f"You no longer act on the ProxyPlane account {account.email}",
        [
            f"{ctx.caller.actor or account.email} removed you from {account.email}: your sessions on it "
            f"ended and your {len(keys)} API key(s) on it stopped working.",
            "Your own sign-in is unchanged.",
        ],
    )
    return len(keys)


async def _withdraw_invitations(ctx: Context, row: TeamMember) -> None:
    """The open invitations a member sent end when they can no longer invite (removed, left, or a role
    that does not manage): an accomplice invited just before cannot join afterwards (h3's review)."""
    person = await get_customer(ctx.session, row.person_id)
    now = utcnow()
    for sent in await repo.open_invitations(ctx.session, row.account_id, now):
        if sent.invited_by.lower() == person.email.lower():
            await repo.revoke_invitation(ctx.session, sent, now)


def _about(row: TeamMember, email: str) -> dict[str, object]:
    """A member change's webhook payload (member.* events)."""
    return {"member_id": row.id, "email": email, "role": row.role}


async def _people(ctx: Context, row: TeamMember) -> tuple[Customer, Customer]:
    """(the account, the member's own sign-in)"""
    return await get_customer(ctx.session, row.account_id), await get_customer(ctx.session, row.person_id)


async def revoke_invitation(ctx: Context, invitation_id: int) -> None:
    await require_manager(ctx)
    row = await repo.invitation(ctx.session, invitation_id)
    if row is None or row.account_id != ctx.customer_id or invitation_state(row) != "ok":
        raise NotFound(f"no open invitation {invitation_id}")
    await repo.revoke_invitation(ctx.session, row, utcnow())
    await note_action(
        ctx.session, ctx.customer_id, ctx.caller.member_id, ctx.caller, "member.invitation_revoked", row.email
    )


async def leave(ctx: Context) -> int:
    """The calling member leaves the account (any role; the holder cannot: it is the account). Their API keys
    on it are revoked; their browsers acting on it go back to the person's own account (not signed out:
    leaving is their own choice). Returns how many keys were revoked."""
    if ctx.caller.member_id is None:
        raise Conflict("the account holder cannot leave their own account")
    _, row = await caller_role(ctx)
    assert row is not None
    await _not_holder(ctx, row, "leave")
    now = utcnow()
    await repo.remove(ctx.session, row, now)
    await repo.release_member_sessions(ctx.session, row.id)
    await _withdraw_invitations(ctx, row)
    keys = await repo.member_keys(ctx.session, ctx.customer_id, row.id)
    for key in keys:
        await revoke_key(ctx.session, ctx.customer_id, key.id)
    await note_action(
        ctx.session, ctx.customer_id, row.id, ctx.caller, "member.left", f"{len(keys)} keys revoked"
    )
    account, person = await _people(ctx, row)
    await emit(
        ctx.session, account.id, "member.left", {**_about(row, person.email), "keys_revoked": len(keys)}
    )
    await mails.tell(
        ctx.platform,
        ctx.session,
        account.id,
        await mails.address(ctx.session, account),
        f"{person.email} left your ProxyPlane account",
        [
            f"{person.email} ({row.role}) left {account.email} by themselves; their {len(keys)} API key(s) "
            "on it stopped working."
        ],
    )
    return len(keys)
