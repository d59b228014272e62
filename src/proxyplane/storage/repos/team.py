"""The one writer (and reader) of `team_members`, `team_invitations` and `account_activity`, and of the
team columns of `web_sessions` and `api_keys` (issue 34.5). Nothing here commits."""

from __future__ import annotations

import hashlib
import secrets
from datetime import datetime
from typing import cast

from sqlalchemy import Table, func, insert, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.storage.driver import DriverStatement
from proxyplane.storage.models import ApiKey, Customer, WebSession
from proxyplane.storage.models.account_security import AppPassword
from proxyplane.storage.models.team import AccountActivity, TeamInvitation, TeamMember
from proxyplane.storage.rowcount import rowcount


def digest(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


# members


async def member(session: AsyncSession, member_id: int) -> TeamMember | None:
    return await session.get(TeamMember, member_id)


async def member_by_person(session: AsyncSession, account_id: int, person_id: int) -> TeamMember | None:
    found = await session.execute(
        select(TeamMember).where(TeamMember.account_id == account_id, TeamMember.person_id == person_id)
    )
    return found.scalars().first()


async def members(
    session: AsyncSession, account_id: int, removed_too: bool = False
) -> list[tuple[TeamMember, Customer]]:
    """The account's current members (and removed ones, `removed_too`) with their person rows, oldest
    first."""
    where = [TeamMember.account_id == account_id]
    if not removed_too:
        where.append(TeamMember.removed_at.is_(None))
    rows = await session.execute(
        select(TeamMember, Customer)
        .join(Customer, Customer.id == TeamMember.person_id)
        .where(*where)
        .order_by(TeamMember.created_at, TeamMember.id)
    )
    return [(m, c) for m, c in rows.tuples()]


async def mailed_members(
    session: AsyncSession, account_ids: set[int]
) -> dict[int, list[tuple[int, int, str, str]]]:
    """Per account, its current members whose sign-in is active: (member id, person id, email, role)."""
    if not account_ids:
        return {}
    rows = await session.execute(
        select(TeamMember.account_id, TeamMember.id, TeamMember.person_id, Customer.email, TeamMember.role)
        .join(Customer, Customer.id == TeamMember.person_id)
        .where(
            TeamMember.account_id.in_(sorted(account_ids)),
            TeamMember.removed_at.is_(None),
            Customer.status == "active",
        )
        .order_by(TeamMember.id)
    )
    found: dict[int, list[tuple[int, int, str, str]]] = {}
    for account_id, member_id, person_id, email, role in rows:
        found.setdefault(int(account_id), []).append((int(member_id), int(person_id), str(email), str(role)))
    return found


async def memberships(session: AsyncSession, person_id: int) -> list[tuple[TeamMember, Customer]]:
    """The accounts a person acts on (with each account's row), oldest first."""
    rows = await session.execute(
        select(TeamMember, Customer)
        .join(Customer, Customer.id == TeamMember.account_id)
        .where(TeamMember.person_id == person_id, TeamMember.removed_at.is_(None))
        .order_by(TeamMember.created_at, TeamMember.id)
    )
    return [(m, c) for m, c in rows.tuples()]


async def join(
    session: AsyncSession, account_id: int, person_id: int, role: str, invited_by: str, now: datetime
) -> TeamMember:
    """Add a person to an account (a removed member's row comes back with the new role)."""
    row = await member_by_person(session, account_id, person_id)
    if row is None:
        row = TeamMember(
            account_id=account_id,
            person_id=person_id,
            role=role,
            invited_by=invited_by,
            created_at=now,
            updated_at=now,
        )
        session.add(row)
    else:
        row.role, row.invited_by, row.removed_at, row.updated_at = role, invited_by, None, now
    await session.flush()
    return row


async def set_role(session: AsyncSession, row: TeamMember, role: str, now: datetime) -> None:
    row.role, row.updated_at = role, now
    await session.flush()


async def remove(session: AsyncSession, row: TeamMember, now: datetime) -> None:
    row.removed_at, row.updated_at = now, now
    await session.flush()


# what a member holds: sessions and API keys


async def end_member_sessions(session: AsyncSession, member_id: int, now: datetime) -> int:
    """Sign out every browser acting through this membership."""
    result = await session.execute(
        update(WebSession)
        .where(WebSession.member_id == member_id, WebSession.revoked_at.is_(None))
        .values(revoked_at=now)
        .execution_options(synchronize_session=False)
    )
    return rowcount(result)


async def release_member_sessions(session: AsyncSession, member_id: int) -> int:
    """Every live browser acting through this membership goes back to the person's own account."""
    result = await session.execute(
        update(WebSession)
        .where(WebSession.member_id == member_id, WebSession.revoked_at.is_(None))
        .values(member_id=None)
        .execution_options(synchronize_session=False)
    )
    return rowcount(result)


async def act_as(session: AsyncSession, session_id: str, person_id: int, member_id: int | None) -> bool:
    """Switch one of the person's live sessions to a membership (None: their own account)."""
    result = await session.execute(
        update(WebSession)
        .where(
            WebSession.id == session_id, WebSession.customer_id == person_id, WebSession.revoked_at.is_(None)
        )
        .values(member_id=member_id)
        .execution_options(synchronize_session=False)
    )
    return rowcount(result) == 1


async def member_keys(session: AsyncSession, account_id: int, member_id: int) -> list[ApiKey]:
    rows = await session.execute(
        select(ApiKey).where(
            ApiKey.customer_id == account_id, ApiKey.member_id == member_id, ApiKey.revoked_at.is_(None)
        )
    )
    return list(rows.scalars())


async def narrow_key(session: AsyncSession, key: ApiKey, scopes: list[str]) -> None:
    key.scopes = scopes
    await session.flush()


async def mark_key(session: AsyncSession, key: ApiKey, member_id: int) -> None:
    key.member_id = member_id
    await session.flush()


# handing the account over


async def set_holder(session: AsyncSession, account: Customer, member_id: int, now: datetime) -> None:
    account.holder_member_id, account.updated_at = member_id, now
    await session.flush()


async def close_own_sign_in(session: AsyncSession, account: Customer, now: datetime) -> int:
    """The account's own sign-in stops working: its password can no longer match (an unusable hash), its
    app passwords are revoked and its dashboard sessions end. Returns how many sessions ended."""
    account.password_hash = f"!handed-over {now.isoformat()}"  # never a valid argon2 hash
    await session.flush()
    await session.execute(
        update(AppPassword)
        .where(AppPassword.customer_id == account.id, AppPassword.revoked_at.is_(None))
        .values(revoked_at=now)
        .execution_options(synchronize_session=False)
    )
    ended = await session.execute(
        update(WebSession)
        .where(WebSession.customer_id == account.id, WebSession.revoked_at.is_(None))
        .values(revoked_at=now)
        .execution_options(synchronize_session=False)
    )
    return rowcount(ended)


async def holder_keys(session: AsyncSession, account_id: int) -> list[ApiKey]:
    """The account's live API keys made by its own sign-in (no member)."""
    rows = await session.execute(
        select(ApiKey).where(
            ApiKey.customer_id == account_id, ApiKey.member_id.is_(None), ApiKey.revoked_at.is_(None)
        )
    )
    return list(rows.scalars())


async def holder_addresses(session: AsyncSession, member_ids: set[int]) -> dict[int, str]:
    """The sign-in address of each holder member (member id -> email)."""
    if not member_ids:
        return {}
    rows = await session.execute(
        select(TeamMember.id, Customer.email)
        .join(Customer, Customer.id == TeamMember.person_id)
        .where(TeamMember.id.in_(sorted(member_ids)))
    )
    return {int(member_id): str(email) for member_id, email in rows}


# invitations


async def invite(
    session: AsyncSession,
    account_id: int,
    email: str,
    role: str,
    invited_by: str,
    now: datetime,
    expires_at: datetime,
) -> tuple[TeamInvitation, str]:
    """A new invitation; any earlier open one to the same address is revoked. Returns the raw token
    (only its hash is stored)."""
    await session.execute(
        update(TeamInvitation)
        .where(
            TeamInvitation.account_id == account_id,
            TeamInvitation.email == email,
            TeamInvitation.accepted_at.is_(None),
            TeamInvitation.revoked_at.is_(None),
        )
        .values(revoked_at=now)
        .execution_options(synchronize_session=False)
    )
    raw = secrets.token_urlsafe(32)
    row = TeamInvitation(
        account_id=account_id,
        email=email,
        role=role,
        token_hash=digest(raw),
        invited_by=invited_by,
        created_at=now,
        expires_at=expires_at,
    )
    session.add(row)
    await session.flush()
    return row, raw


async def invitation(session: AsyncSession, invitation_id: int) -> TeamInvitation | None:
    return await session.get(TeamInvitation, invitation_id)


async def invitation_by_token(session: AsyncSession, raw: str) -> TeamInvitation | None:
    found = await session.execute(select(TeamInvitation).where(TeamInvitation.token_hash == digest(raw)))
    return found.scalars().first()


async def open_invitations(session: AsyncSession, account_id: int, now: datetime) -> list[TeamInvitation]:
    rows = await session.execute(
        select(TeamInvitation)
        .where(
            TeamInvitation.account_id == account_id,
            TeamInvitation.accepted_at.is_(None),
            TeamInvitation.revoked_at.is_(None),
            TeamInvitation.expires_at > now,
        )
        .order_by(TeamInvitation.created_at.desc(), TeamInvitation.id.desc())
    )
    return list(rows.scalars())


async def invitations_since(session: AsyncSession, account_id: int, since: datetime) -> int:
    count = select(func.count()).where(
        TeamInvitation.account_id == account_id, TeamInvitation.created_at >= since
    )
    return int((await session.execute(count)).scalar_one())


async def accept(session: AsyncSession, invitation_id: int, now: datetime) -> bool:
    """Use an invitation once: one conditional UPDATE (two clicks racing: one wins)."""
    result = await session.execute(
        update(TeamInvitation)
        .where(
            TeamInvitation.id == invitation_id,
            TeamInvitation.accepted_at.is_(None),
            TeamInvitation.revoked_at.is_(None),
            TeamInvitation.expires_at > now,
        )
        .values(accepted_at=now)
        .execution_options(synchronize_session=False)
    )
    return rowcount(result) == 1


async def revoke_invitation(session: AsyncSession, row: TeamInvitation, now: datetime) -> None:
    row.revoked_at = now
    await session.flush()


# the activity log


# one Core INSERT on the driver connection (storage/driver.py): an order's unit of work stays without an ORM
# session (issue 15's lean path) while it notes who placed it
_RECORD = DriverStatement(insert(cast(Table, AccountActivity.__table__)))


async def record(
    session: AsyncSession,
    account_id: int,
    member_id: int | None,
    actor: str,
    action: str,
    detail: str,
    channel: str,
    client_ip: str,
    now: datetime,
) -> None:
    await _RECORD.rows(
        session,
        {
            "account_id": account_id,
            "member_id": member_id,
            "actor": actor[:320],
            "action": action[:80],
            "detail": detail[:1000],
            "channel": channel[:20],
            "client_ip": client_ip[:45],
            "created_at": now,
        },
    )


async def activity(
    session: AsyncSession, account_id: int, offset: int, limit: int, member_id: int | None = None
) -> tuple[list[AccountActivity], int]:
    where = [AccountActivity.account_id == account_id]
    if member_id is not None:
        where.append(AccountActivity.member_id == member_id)
    total = (
        await session.execute(select(func.count()).select_from(AccountActivity).where(*where))
    ).scalar_one()
    rows = await session.execute(
        select(AccountActivity)
        .where(*where)
        .order_by(AccountActivity.created_at.desc(), AccountActivity.id.desc())
        .offset(offset)
        .limit(limit)
    )
    return list(rows.scalars()), int(total)
