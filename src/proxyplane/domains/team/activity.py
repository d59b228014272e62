"""The account's activity log (issue 34.5): who did what. `invoke()` notes every write made on a customer
account, on every door (dashboard, REST, MCP, legacy), by a member or by the holder; member changes note
themselves, and a dashboard sign-in notes itself (accounts/sign_in_mail.after_sign_in). The row is one Core
INSERT on the driver connection (storage/repos/team.record): the lean order path stays ORM-free."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from proxyplane.core.clock import utcnow
from proxyplane.storage.repos import team as repo

if TYPE_CHECKING:
    from proxyplane.ops import Caller, Operation

HIDDEN = ("password", "code", "token", "secret", "csrf", "pending", "session_id", "current", "idempotency")
# dashboard plumbing that is not an action on the account, and the member changes (they note themselves,
# on every door: domains/team/service.py)
SKIPPED = frozenset(
    {
        "web_touch_session",
        "web_sign_out",
        "web_switch_account",
        "web_accept_invitation",
        "invite_member",
        "change_member_role",
        "remove_member",
        "revoke_invitation",
        "leave_account",
        "hand_over_account",
    }
)


def noted(op: Operation, caller: Caller) -> bool:
    """Whether invoke() notes this call: a write on a customer account (not an operator's, not a read)."""
    return caller.customer_id is not None and op.effect != "read" and op.name not in SKIPPED


def detail_of(data: BaseModel | None) -> str:
    """The call's input without anything secret, as short JSON."""
    if data is None:
        return ""
    values: dict[str, Any] = {
        k: v
        for k, v in data.model_dump(mode="json").items()
        if not any(word in k for word in HIDDEN) and v not in (None, "", [], {})
    }
    return json.dumps(values, sort_keys=True, separators=(",", ":"))[:1000] if values else ""


async def note(session: Any, op: Operation, caller: Caller, data: BaseModel | None) -> None:
    assert caller.customer_id is not None
    await note_action(session, caller.customer_id, caller.member_id, caller, op.name, detail_of(data))


async def note_action(
    session: Any, account_id: int, member_id: int | None, caller: Caller, action: str, detail: str
) -> None:
    await repo.record(
        session,
        account_id,
        member_id,
        caller.actor,
        action,
        detail,
        caller.channel,
        caller.client_ip,
        utcnow(),
    )
