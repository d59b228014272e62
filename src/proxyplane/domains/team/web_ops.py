"""The dashboard's side of team accounts (issue 34.5), served by the "web" door only: look at an emailed
invitation, accept it as the signed-in person, list the accounts one acts on, and switch this browser
between them. These act on the signed-in PERSON (the dashboard's caller for them is the person, whatever
account the browser acts on: adapters/web/base.py PERSONAL)."""

from __future__ import annotations

from pydantic import BaseModel, Field

from proxyplane.domains.accounts.service import find_by_email, get_customer
from proxyplane.domains.team import service
from proxyplane.ops import Auth, Context, Effect, Operation, register, web_op
from proxyplane.storage.repos import team as repo


class InvitationLink(BaseModel):
    token: str = Field(max_length=200)
    session_id: str = Field(default="", max_length=64, description="the accepting browser's session id")


class InvitationView(BaseModel):
    outcome: str = Field(
        description="ok | used | revoked | expired | unknown | other_address | own_account (accept only)"
    )
    email: str = ""
    role: str = ""
    account: str = Field(default="", description="the inviting account's name or email")
    invited_by: str = ""
    has_sign_in: bool = False


class Switch(BaseModel):
    session_id: str = Field(max_length=64)
    member_id: int | None = Field(default=None, ge=1, description="null: the person's own account")


class AccountChoice(BaseModel):
    member_id: int | None
    account: str
    account_email: str
    role: str


class AccountChoices(BaseModel):
    items: list[AccountChoice]


async def _view(ctx: Context, data: InvitationLink, outcome: str | None = None) -> InvitationView:
    row = await repo.invitation_by_token(ctx.session, data.token) if data.token else None
    state = service.invitation_state(row)
    if row is None:
        return InvitationView(outcome=state)
    account = await get_customer(ctx.session, row.account_id)
    return InvitationView(
        outcome=outcome or state,
        email=row.email,
        role=row.role,
        account=account.name or account.email,
        invited_by=row.invited_by,
        has_sign_in=await find_by_email(ctx.session, row.email) is not None,
    )


async def check_invitation(ctx: Context, data: InvitationLink) -> InvitationView:
    return await _view(ctx, data)


async def accept_invitation(ctx: Context, data: InvitationLink) -> InvitationView:
    outcome, _ = await service.accept(ctx.session, ctx.caller, data.token, data.session_id, ctx.platform)
    return await _view(ctx, data, outcome)


async def my_accounts(ctx: Context, _: None) -> AccountChoices:
    own = await get_customer(ctx.session, ctx.customer_id)
    items = [AccountChoice(member_id=None, account="Your own account", account_email=own.email, role="owner")]
    for m, account in await repo.memberships(ctx.session, ctx.customer_id):
        if account.status == "active":
            items.append(
                AccountChoice(
                    member_id=m.id,
                    account=account.name or account.email,
                    account_email=account.email,
                    role=m.role,
                )
            )
    return AccountChoices(items=items)


async def switch_account(ctx: Context, data: Switch) -> AccountChoices:
    await service.switch(ctx.session, ctx.caller, data.session_id, data.member_id)
    return await my_accounts(ctx, None)


def _op(
    name: str,
    handler: object,
    input: type[BaseModel] | None,
    output: type[BaseModel],
    effect: Effect = Effect.WRITE,
    auth: Auth = Auth.KEY,
) -> Operation:
    return web_op(name, handler, input, output, effect=effect, auth=auth)


CHECK_INVITATION = _op(
    "check_invitation", check_invitation, InvitationLink, InvitationView, Effect.READ, Auth.NONE
)
ACCEPT_INVITATION = _op("accept_invitation", accept_invitation, InvitationLink, InvitationView)
MY_ACCOUNTS = _op("my_accounts", my_accounts, None, AccountChoices, Effect.READ)
SWITCH_ACCOUNT = _op("switch_account", switch_account, Switch, AccountChoices)
register(CHECK_INVITATION, ACCEPT_INVITATION, MY_ACCOUNTS, SWITCH_ACCOUNT)
