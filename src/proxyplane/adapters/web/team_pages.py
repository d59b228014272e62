"""Team accounts in the dashboard (issue 34.5): /team (the accounts this person acts on, the members,
invitations and the activity log), and the emailed invitation at /team/accept/TOKEN. Every action is an
operation of domains/team/ (ops.py for the account, web_ops.py for the person)."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from proxyplane.adapters.web.account import anonymous
from proxyplane.adapters.web.base import (
    WebRoute,
    acting_on,
    attach_session,
    call,
    form,
    platform_of,
    redirect,
    render,
    require_login,
    web_session,
)
from proxyplane.core.errors import DomainError
from proxyplane.domains.team.roles import MANAGERS, ROLES
from proxyplane.operations import REGISTRY
from proxyplane.ops import invoke

router = APIRouter(route_class=WebRoute, include_in_schema=False)


def _offset(request: Request) -> int:
    try:
        return max(0, int(request.query_params.get("offset", "0")))
    except ValueError:
        return 0


@router.get("/team")
async def team(request: Request) -> Response:
    await require_login(request)
    accounts = await call(request, "web_my_accounts")
    acting = acting_on(request)
    current = acting.member_id if acting is not None else None
    members = await call(request, "list_members")
    activity = await call(request, "get_account_activity", {"offset": _offset(request), "limit": 25})
    return render(
        request,
        "team.html",
        accounts=accounts.items,
        current=current,
        members=members,
        manager=members.your_role in MANAGERS,
        roles=ROLES,
        activity=activity,
    )


async def _act(request: Request, name: str, data: dict[str, object], done: str) -> Response:
    try:
        await call(request, name, data)
    except DomainError as exc:
        return redirect(request, "/team", exc.message, kind="error")
    return redirect(request, "/team", done)


@router.post("/team/invite")
async def invite(request: Request) -> Response:
    await require_login(request)
    data = await form(request)
    email, role = str(data.get("email", "")).strip(), str(data.get("role", ""))
    return await _act(
        request, "invite_member", {"email": email, "role": role}, f"Invitation sent to {email} ({role})."
    )


@router.post("/team/members/{member_id}/role")
async def change_role(request: Request, member_id: int) -> Response:
    await require_login(request)
    data = await form(request)
    role = str(data.get("role", ""))
    return await _act(
        request, "change_member_role", {"member_id": member_id, "role": role}, f"The member is now {role}."
    )


@router.post("/team/members/{member_id}/remove")
async def remove(request: Request, member_id: int) -> Response:
    await require_login(request)
    await form(request)
    return await _act(
        request,
        "remove_member",
        {"member_id": member_id},
        "Member removed: their sessions on this account ended and their API keys stopped working.",
    )


@router.post("/team/members/{member_id}/hand-over")
async def hand_over(request: Request, member_id: int) -> Response:
    await require_login(request)
    data = await form(request)
    revoke = str(data.get("revoke_own_keys", "")) == "on"
    try:
        done = await call(request, "hand_over_account", {"member_id": member_id, "revoke_own_keys": revoke})
    except DomainError as exc:
        return redirect(request, "/team", exc.message, kind="error")
    if done.sessions_ended:  # this browser was the account's own sign-in: closed now
        return redirect(request, "/login", "The account was handed over; its own sign-in is closed.")
    return redirect(request, "/team", "The account was handed over: you stay an owner.")


@router.post("/team/invitations/{invitation_id}/revoke")
async def revoke(request: Request, invitation_id: int) -> Response:
    await require_login(request)
    await form(request)
    return await _act(request, "revoke_invitation", {"invitation_id": invitation_id}, "Invitation withdrawn.")


@router.post("/team/leave")
async def leave(request: Request) -> Response:
    await require_login(request)
    await form(request)
    acting = acting_on(request)
    if acting is None:
        return redirect(request, "/team", "You act on your own account: there is nothing to leave.", "error")
    try:
        left = await call(request, "leave_account")
    except DomainError as exc:
        return redirect(request, "/team", exc.message, kind="error")
    keys = f" {left.keys_revoked} of your API keys on it stopped working." if left.keys_revoked else ""
    return redirect(request, "/overview", f"You left {acting.account_email}.{keys}")


@router.post("/team/switch")
async def switch(request: Request) -> Response:
    row = await require_login(request)
    data = await form(request)
    raw = str(data.get("member_id", "")).strip()
    member_id = int(raw) if raw.isdigit() else None
    try:
        choices = await call(request, "web_switch_account", {"session_id": row.id, "member_id": member_id})
    except DomainError as exc:
        return redirect(request, "/team", exc.message, kind="error")
    chosen = next((c for c in choices.items if c.member_id == member_id), None)
    label = f"{chosen.account} as {chosen.role}" if chosen and member_id else "your own account"
    return redirect(request, "/overview", f"You now act on {label}.")


@router.get("/team/accept/{token}")
async def invitation(request: Request, token: str) -> Response:
    if await attach_session(request) is not None:
        view = await call(request, "web_check_invitation", {"token": token})
    else:  # before sign-in: the page offers to sign in (or create a sign-in) and come back here
        op = REGISTRY["web_check_invitation"]
        view = await invoke(platform_of(request), op, anonymous(request), op.input(token=token))  # type: ignore[misc]
    status = {"ok": 200, "unknown": 404}.get(view.outcome, 410)
    return render(
        request,
        "team_accept.html",
        status=status,
        view=view,
        token=token,
        here=f"/team/accept/{token}",
        person=getattr(request.state, "email", ""),
    )


@router.post("/team/accept/{token}")
async def accept(request: Request, token: str) -> Response:
    await require_login(request)
    await form(request)
    view = await call(
        request, "web_accept_invitation", {"token": token, "session_id": web_session(request).id}
    )
    if view.outcome != "ok":
        status = {"other_address": 403, "own_account": 409, "unknown": 404}.get(view.outcome, 410)
        return render(
            request,
            "team_accept.html",
            status=status,
            view=view,
            token=token,
            here=f"/team/accept/{token}",
            person=getattr(request.state, "email", ""),
        )
    return redirect(request, "/overview", f"Welcome to {view.account}: you act on it as {view.role}.")
