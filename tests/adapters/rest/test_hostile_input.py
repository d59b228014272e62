"""Issue 30.5: hostile JSON and invisible characters, REST and legacy (MCP: tests/adapters/mcp/). A
100,000-deep body and a 5,000-digit number are 422 with the documented error body on REST (the short way
and FastAPI's) and refused as malformed by the legacy API; a subject or name with a right-to-left
override or a zero-width character is 422 naming the field."""

from __future__ import annotations

import httpx
import pytest

from tests.adapters.legacy.support import auth
from tests.support import Account, bearer

pytestmark = pytest.mark.anyio

API = "/api/v1"
DEEP = "[" * 100_000 + "]" * 100_000
HUGE = "9" * 5_000
JSON = {"content-type": "application/json"}


def refused(r: httpx.Response, kind: str) -> None:
    assert r.status_code == 422, r.text
    detail = r.json()["detail"]
    assert detail["error"] == "validation_error"
    assert detail["errors"] == [{"loc": ["body"], "msg": detail["message"], "type": kind}]


async def test_rest_refuses_deep_bodies_and_long_numbers(client: httpx.AsyncClient, account: Account) -> None:
    h = {**bearer(await account.key()), **JSON}
    tickets = f"{API}/customer/tickets"
    reply = f"{API}/customer/tickets/00000000-0000-0000-0000-000000000000/reply"  # FastAPI's way
    for url, head in ((tickets, '{"subject": "a", "message": "b", "service_id": '), (reply, '{"message": ')):
        refused(await client.post(url, content=head + DEEP + "}", headers=h), "json_too_deep")
        refused(await client.post(url, content=head + HUGE + "}", headers=h), "number_too_long")
    no_type = await client.post(
        tickets, content='{"subject": "a", "message": ' + DEEP + "}", headers=bearer(await account.key())
    )
    refused(no_type, "json_too_deep")  # FastAPI parses a body without a content type as JSON too
    listed = await client.get(tickets, headers=h)
    assert listed.json()["total"] == 0  # nothing written
    ok = await client.post(tickets, json={"subject": "[[[", "message": "9" * 5000}, headers=h)
    assert ok.status_code == 201, ok.text  # brackets and digits inside strings are text


async def test_legacy_refuses_them_as_malformed(client: httpx.AsyncClient, account: Account) -> None:
    for body in ('{"period": ' + DEEP + "}", '{"period": ' + HUGE + "}"):
        r = await client.put("/api/service/1", content=body, headers={**auth(account), **JSON})
        assert r.status_code == 422, r.text
        assert set(r.json()) == {"error"}


@pytest.mark.parametrize(
    "bad", ["invoice\u202egnp.exe", "zero\u200bwidth", "iso\u2067late\u2069", "two\nlines"]
)
async def test_subjects_and_names_refuse_invisible_characters(
    client: httpx.AsyncClient, account: Account, bad: str
) -> None:
    h = bearer(await account.key())
    r = await client.post(f"{API}/customer/tickets", json={"subject": bad, "message": "hello"}, headers=h)
    assert r.status_code == 422, r.text
    assert r.json()["detail"]["message"].startswith("subject: Value error, must not contain control")
    r = await client.patch(f"{API}/customer/me", json={"name": bad}, headers=h)
    assert r.status_code == 422 and r.json()["detail"]["errors"][0]["loc"] == ["body", "name"], r.text
    body = {"name": bad, "scopes": ["tickets:read"]}
    r = await client.post(f"{API}/customers/me/api-keys", json=body, headers=h)
    assert r.status_code == 422 and r.json()["detail"]["errors"][0]["loc"] == ["body", "name"], r.text
    ok = await client.post(
        f"{API}/customer/tickets", json={"subject": "שלום, 日本 👍", "message": bad}, headers=h
    )
    assert ok.status_code == 201, ok.text  # a message body is free text: lines, and any script
