"""Handing a team account over to one of its members (issue 34.5): the member becomes its holder (an owner
nobody can remove or demote, who alone can hand it on); the first time, the account's own sign-in is
closed (password, app passwords, sessions, pending reset links), and its own API keys are revoked when
asked (they may run the company's integrations: kept by default, named in the new holder's email).
Decisions: docs/decisions/team-accounts.md."""

from __future__ import annotations

from dataclasses import dataclass

from proxyplane.core.clock import utcnow
from proxyplane.core.errors import Conflict, Forbidden
from proxyplane.domains.accounts.service import get_customer
from proxyplane.domains.apikeys.service import revoke_key
from proxyplane.domains.events.service import emit
from proxyplane.domains.team import mails
from proxyplane.domains.team.activity import note_action
from proxyplane.domains.team.service import target
from proxyplane.ops import Context
from proxyplane.storage.repos import account_security
from proxyplane.storage.repos import team as repo

RESET = "reset_password"  # domains/accounts/recovery.RESET: its pending links stop working


@dataclass(frozen=True)
class Outcome:
    member_id: int
    sessions_ended: int
    keys_revoked: int
    keys_kept: int


async def hand_over(ctx: Context, member_id: int, revoke_own_keys: bool) -> Outcome:
    account = await get_customer(ctx.session, ctx.customer_id)
    if ctx.caller.member_id != account.holder_member_id:
        raise Forbidden("only the account's holder can hand it over")
    row = await target(ctx, member_id)
    now = utcnow()
    before = await mails.address(ctx.session, account)
    if row.role != "owner":
        await repo.set_role(ctx.session, row, "owner", now)
    first = account.holder_member_id is None
    await repo.set_holder(ctx.session, account, row.id, now)
    ended = revoked = 0
    kept = await repo.holder_keys(ctx.session, account.id)
    if first:
        ended = await repo.close_own_sign_in(ctx.session, account, now)
        await account_security.void_tokens(ctx.session, account.id, RESET, now)
        if revoke_own_keys:
            for key in kept:
                await revoke_key(ctx.session, account.id, key.id)
            revoked, kept = len(kept), []
    elif revoke_own_keys:
        raise Conflict("the account's own sign-in was handed over before: revoke its keys on the keys page")
    person = await get_customer(ctx.session, row.person_id)
    await note_action(
        ctx.session, account.id, ctx.caller.member_id, ctx.caller, "member.handed_over", person.email
    )
    data = {"member_id": row.id, "email": person.email, "own_sign_in_closed": first, "keys_revoked": revoked}
    await emit(ctx.session, account.id, "account.handed_over", data)
    still = f" {len(kept)} API key(s) made before still work: revoke those you do not know." if kept else ""
    await mails.tell(
        ctx.platform,
        ctx.session,
        account.id,
        person.email,
        f"You now hold the ProxyPlane account {account.email}",
        [
            f"{before} handed the account {account.email} over to you: you are its holder, an owner nobody "
            f"can remove.{still}"
        ],
    )
    closed = " Its own sign-in is closed." if first else " You stay an owner."
    await mails.tell(
        ctx.platform,
        ctx.session,
        account.id,
        before,
        f"The ProxyPlane account {account.email} is now held by {person.email}",
        [f"The account {account.email} was handed over to {person.email}.{closed}"],
    )
    return Outcome(row.id, ended, revoked, len(kept))
