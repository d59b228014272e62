"""Support tickets over REST: open, list, read, reply, close, reopen; scopes; another customer's ticket."""

import uuid

import httpx
import pytest

from proxyplane.platform import Platform
from tests.adapters.rest.growth_support import buy
from tests.support import Account, bearer, make_account

pytestmark = pytest.mark.anyio
BASE = "/api/v1/customer/tickets"


async def test_ticket_flow(client: httpx.AsyncClient, account: Account) -> None:
    key = await account.key({"tickets:read", "tickets:write"})
    body = {"subject": "Slow proxy", "message": "IP 1 is slow"}
    r = await client.post(BASE, json=body, headers=bearer(key))
    assert r.status_code == 201, r.text
    t = r.json()
    assert t["status"] == "open" and t["service_id"] is None
    assert [(m["author"], m["body"]) for m in t["messages"]] == [("customer", "IP 1 is slow")]
    page = (await client.get(BASE, headers=bearer(key))).json()
    assert (
        page["total"] == 1
        and page["items"][0]["ticket_id"] == t["ticket_id"]
        and "messages" not in page["items"][0]
    )
    path = f"{BASE}/{t['ticket_id']}"
    closed = (await client.post(f"{path}/close", headers=bearer(key))).json()
    assert closed["status"] == "closed" and closed["closed_at"] is not None
    assert (await client.get(f"{BASE}?status=closed", headers=bearer(key))).json()["total"] == 1
    reopened = (
        await client.post(f"{path}/reply", json={"message": "still slow"}, headers=bearer(key))
    ).json()
    assert reopened["status"] == "open" and reopened["closed_at"] is None
    assert [m["body"] for m in reopened["messages"]] == ["IP 1 is slow", "still slow"]
    assert (await client.get(path, headers=bearer(key))).json()["messages"][1]["author"] == "customer"


async def test_scopes_and_validation(client: httpx.AsyncClient, account: Account) -> None:
    read_only = await account.key({"tickets:read"})
    r = await client.post(BASE, json={"subject": "x", "message": "y"}, headers=bearer(read_only))
    assert r.status_code == 403 and r.json()["detail"]["missing_scopes"] == ["tickets:write"]
    write_only = await account.key({"tickets:write"})
    assert (await client.get(BASE, headers=bearer(write_only))).status_code == 403
    r = await client.post(BASE, json={"subject": "", "message": "y"}, headers=bearer(write_only))
    assert r.status_code == 422
    r = await client.post(
        BASE, json={"subject": "s", "message": "y", "priority": 1}, headers=bearer(write_only)
    )
    assert r.status_code == 422


async def test_other_customers_ticket_is_not_found(
    client: httpx.AsyncClient, platform, account: Account
) -> None:
    t = (
        await client.post(BASE, json={"subject": "a", "message": "b"}, headers=bearer(await account.key()))
    ).json()
    skey = await (await make_account(platform)).key()
    assert (await client.get(f"{BASE}/{t['ticket_id']}", headers=bearer(skey))).status_code == 404
    r = await client.post(f"{BASE}/{t['ticket_id']}/reply", json={"message": "hi"}, headers=bearer(skey))
    assert r.status_code == 404
    assert (await client.get(BASE, headers=bearer(skey))).json()["total"] == 0


async def test_ticket_service_must_be_the_customers(client: httpx.AsyncClient, platform: Platform) -> None:
    mine = await buy(client, platform, country="SE", count=8, stock=16)
    theirs = await buy(client, platform, country="SE", count=8, stock=None)
    key = await mine.account.key({"tickets:read", "tickets:write"})
    body = {"subject": "Slow proxy", "message": "IP 1 is slow", "service_id": mine.sid}
    r = await client.post(BASE, json=body, headers=bearer(key))
    assert r.status_code == 201 and r.json()["service_id"] == mine.sid, r.text
    for other in (theirs.sid, str(uuid.uuid4())):  # another customer's or an unknown service: 422
        r = await client.post(BASE, json={**body, "service_id": other}, headers=bearer(key))
        assert r.status_code == 422, r.text
        assert r.json()["detail"]["error"] == "validation_error"
        assert r.json()["detail"]["field"] == "service_id"
    page = (await client.get(BASE, headers=bearer(key))).json()
    assert page["total"] == 1
