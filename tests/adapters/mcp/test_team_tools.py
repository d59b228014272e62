"""Issue 34.5: the team operations over MCP (the official client, Streamable HTTP): the same declarations
as REST. The holder's key invites, lists, withdraws; the activity log names who did it; a key without
customer:write cannot invite."""

from __future__ import annotations

import json

import pytest
from fastapi import FastAPI

from tests.adapters.mcp.conftest import mcp_client
from tests.adapters.mcp.test_tools import text
from tests.support import Account, unique_email

pytestmark = pytest.mark.anyio


async def test_members_over_mcp(app: FastAPI, account: Account) -> None:
    email = unique_email()
    async with mcp_client(app, await account.key()) as client:
        sent = await client.call_tool("invite_member", {"email": email, "role": "developer"})
        assert sent.is_error is False, text(sent)
        invitation = json.loads(text(sent))
        assert invitation["email"] == email and invitation["role"] == "developer"
        listed = json.loads(text(await client.call_tool("list_members", {})))
        assert listed["your_role"] == "owner" and listed["items"][0]["holder"] is True
        assert [i["email"] for i in listed["invitations"]] == [email]
        after = await client.call_tool("revoke_invitation", {"invitation_id": invitation["invitation_id"]})
        assert json.loads(text(after))["invitations"] == []
        log = json.loads(text(await client.call_tool("get_account_activity", {})))
        actions = [(e["actor"], e["action"], e["channel"]) for e in log["items"]]
        assert (account.email, "member.invited", "mcp") in actions
        assert (account.email, "member.invitation_revoked", "mcp") in actions
    async with mcp_client(app, await account.key({"customer:read"})) as client:
        refused = await client.call_tool("invite_member", {"email": unique_email(), "role": "viewer"})
        assert refused.is_error and "customer:write" in text(refused)
