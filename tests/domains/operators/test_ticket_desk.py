"""A ticket's team side (issue 33): assigned to an operator who may answer tickets (or to nobody),
internal notes the customer never sees on any of its doors; audited before -> after; on the operator API
(a viewer may read, not assign) and the console's ticket page (take it, note, unassign)."""

from __future__ import annotations

import re
import uuid

import httpx
import pytest

from proxyplane.core.errors import Conflict, NotFound, ValidationFailed
from proxyplane.platform import Platform
from tests.adapters.admin.test_console import csrf, sign_in
from tests.domains.operators.helpers import make_operator, run
from tests.support import Account, bearer

pytestmark = pytest.mark.anyio


async def open_ticket(client: httpx.AsyncClient, account: Account) -> tuple[str, str]:
    key = await account.key()
    opened = await client.post(
        "/api/v1/customer/tickets",
        json={"subject": "desk ticket", "message": "my proxy is down"},
        headers=bearer(key),
    )
    assert opened.status_code in (200, 201), opened.text
    return opened.json()["ticket_id"], key


async def test_assign_and_notes(client: httpx.AsyncClient, platform: Platform, account: Account) -> None:
    tid, key = await open_ticket(client, account)
    support, _, _ = await make_operator(platform, "support")
    finance, _, _ = await make_operator(platform, "finance")
    assert (await run(platform, "operator_ticket_desk", ticket_id=tid)) == {
        "ticket_id": tid,
        "assigned_to": None,
        "notes": [],
    }
    done = await run(platform, "operator_ticket_assign", ticket_id=tid, operator_email=support)
    assert done["assigned_to"] == support
    with pytest.raises(Conflict):  # finance may not answer tickets
        await run(platform, "operator_ticket_assign", ticket_id=tid, operator_email=finance)
    with pytest.raises(NotFound):
        await run(platform, "operator_ticket_assign", ticket_id=tid, operator_email="nobody@example.com")
    await run(platform, "operator_ticket_note", ticket_id=tid, note="refund them if the node stays down")
    desk = await run(platform, "operator_ticket_desk", ticket_id=tid)
    assert desk["assigned_to"] == support
    assert [(n["author"], n["body"]) for n in desk["notes"]] == [
        ("cli", "refund them if the node stays down")
    ]
    (entry,) = (await run(platform, "operator_audit_list", action="operator_ticket_assign", target=tid))[
        "entries"
    ]
    assert entry["before"] == {"assigned_to": None} and entry["after"] == {"assigned_to": support}
    customer = await client.get(f"/api/v1/customer/tickets/{tid}", headers=bearer(key))
    assert customer.status_code == 200 and "refund them" not in customer.text and support not in customer.text
    await run(platform, "operator_ticket_assign", ticket_id=tid, operator_email="")
    assert (await run(platform, "operator_ticket_desk", ticket_id=tid))["assigned_to"] is None


async def test_operator_api_and_console(
    client: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    tid, key = await open_ticket(client, account)
    _, _, viewer = await make_operator(platform, "viewer")
    read = await client.get("/api/admin/v1/ticket_desk", params={"ticket_id": tid}, headers=bearer(viewer))
    assert read.status_code == 200 and read.json()["assigned_to"] is None
    refused = await client.post(
        "/api/admin/v1/ticket_note", json={"ticket_id": tid, "note": "x"}, headers=bearer(viewer)
    )
    assert refused.status_code == 403 and refused.json()["detail"]["missing_permission"] == "tickets.write"
    email, _ = await sign_in(client, platform, "support")
    page = await client.get(f"/admin/tickets/{tid}")
    assert "Nobody has this ticket." in page.text

    def token(html: str, suffix: str) -> str:
        found = re.search(rf'name="form_token" value="([0-9a-f]+{suffix})"', html)
        assert found, suffix
        return found.group(1)

    took = await client.post(
        f"/admin/tickets/{tid}/assign",
        data={"csrf": csrf(page.text), "form_token": token(page.text, "m"), "me": "1"},
    )
    assert took.status_code == 303
    page = await client.get(f"/admin/tickets/{tid}")
    assert re.search(rf'id="assigned-to">Assigned to <strong class="wrap">{re.escape(email)}<', page.text)
    noted = await client.post(
        f"/admin/tickets/{tid}/note",
        data={"csrf": csrf(page.text), "form_token": token(page.text, "n"), "note": "checked the node: fine"},
    )
    assert noted.status_code == 303
    page = await client.get(f"/admin/tickets/{tid}")
    assert "checked the node: fine" in page.text
    customer = await client.get(f"/api/v1/customer/tickets/{tid}", headers=bearer(key))
    assert "checked the node" not in customer.text
    gone = await client.post(
        f"/admin/tickets/{tid}/assign",
        data={"csrf": csrf(page.text), "form_token": token(page.text, "u"), "operator_email": ""},
    )
    assert gone.status_code == 303 and "unassigned" in gone.headers["location"]
    assert (await run(platform, "operator_ticket_desk", ticket_id=tid))["assigned_to"] is None


async def test_assigned_filter(client: httpx.AsyncClient, platform: Platform, account: Account) -> None:
    """The inbox filtered to one's own tickets ('me', console and operator API), an operator's by email
    (CLI), or the unassigned ones; each row says who has it."""
    mine, _ = await open_ticket(client, account)
    other, _ = await open_ticket(client, account)
    email, _ = await sign_in(client, platform, "support")
    page = await client.get(f"/admin/tickets/{mine}")
    took = await client.post(
        f"/admin/tickets/{mine}/assign",
        data={"csrf": csrf(page.text), "form_token": uuid.uuid4().hex, "me": "1"},
    )
    assert took.status_code == 303
    by_email = await run(platform, "operator_ticket_list", assigned=email, limit=500)
    assert [t["ticket_id"] for t in by_email["items"]] == [mine] and by_email["total"] == 1
    assert by_email["items"][0]["assigned_to"] == email
    unassigned = await run(platform, "operator_ticket_list", assigned="nobody", limit=500)
    nobody = {t["ticket_id"] for t in unassigned["items"]}
    assert other in nobody and mine not in nobody
    with pytest.raises(ValidationFailed):  # the host's CLI is nobody's "me"
        await run(platform, "operator_ticket_list", assigned="me")
    with pytest.raises(NotFound):
        await run(platform, "operator_ticket_list", assigned="no-such-operator@example.com")
    listed = await client.get("/admin/tickets", params={"assigned": "me"})
    assert listed.status_code == 200 and f"/admin/tickets/{mine}" in listed.text
    assert f"/admin/tickets/{other}" not in listed.text
    everyone = await client.get("/admin/tickets")
    assert f"/admin/tickets/{other}" in everyone.text
    colleague, _, key = await make_operator(platform, "support")
    await run(platform, "operator_ticket_assign", ticket_id=other, operator_email=colleague)
    theirs = await client.get("/api/admin/v1/ticket_list", params={"assigned": "me"}, headers=bearer(key))
    assert theirs.status_code == 200, theirs.text
    assert [t["ticket_id"] for t in theirs.json()["items"]] == [other]
