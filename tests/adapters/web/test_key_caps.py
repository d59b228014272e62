"""Dashboard keys page: spending caps in dollars, presets, scope descriptions, post/redirect/get with the
secret shown once next to the MCP setup, and one key per sent form (issues 22.5, 22.10)."""

from __future__ import annotations

import re

import httpx
import pytest

from tests.adapters.web.helpers import csrf_of, follow, post_form, signup
from tests.support import bearer

pytestmark = pytest.mark.anyio
TOKEN = re.compile(r'name="form_token" value="([^"]+)"')


async def test_key_with_caps_in_dollars_from_the_keys_page(client: httpx.AsyncClient) -> None:
    await signup(client)
    fields = {"name": "capped bot", "scopes": ["wallet:spend", "customer:read"]}
    made = await follow(
        client, await post_form(client, "/keys", "/keys", {**fields, "spend_limit_daily": "5"})
    )
    assert "$0.00 / $5.00 today" in made.text
    secret = made.text.split('id="secret">', 1)[1].split("<", 1)[0]
    assert f"Authorization: Bearer {secret}" in made.text and "/api/v1/mcp" in made.text  # MCP setup
    again = await client.get("/keys")
    assert secret not in again.text and 'id="new-key"' not in again.text  # shown once
    bad = await post_form(client, "/keys", "/keys", {**fields, "spend_limit_total": "ten"})
    assert bad.status_code == 422 and "amounts in dollars" in bad.text
    listed = (await client.get("/api/v1/customers/me/api-keys", headers=bearer(secret))).json()
    assert [(k["name"], k["spend_limit_daily_cents"], k["spend_limit_total_cents"]) for k in listed] == [
        ("capped bot", 500, None)
    ]


async def test_preset_scopes_and_one_key_per_form(client: httpx.AsyncClient) -> None:
    await signup(client)
    page = await client.get("/keys")
    assert "pay from the wallet" in page.text  # scope descriptions
    form = {
        "csrf": csrf_of(page),
        "form_token": TOKEN.search(page.text).group(1),  # type: ignore[union-attr]
        "name": "reader",
        "preset": "read_only",
        "spend_limit_total": "12.50",
    }
    first = await client.post("/keys", data=form)
    shown = await follow(client, first)
    secret = shown.text.split('id="secret">', 1)[1].split("<", 1)[0]
    second = await client.post("/keys", data=form)  # the same form again (Back, then submit)
    assert second.status_code == 303 and "already sent" in (await follow(client, second)).text
    listed = (await client.get("/api/v1/customers/me/api-keys", headers=bearer(secret))).json()
    assert len(listed) == 1
    key = listed[0]
    assert key["spend_limit_total_cents"] == 1250
    assert sorted(key["scopes"]) == sorted(
        ["catalog:read", "services:read", "usage:read", "wallet:read", "tickets:read", "customer:read"]
    )
