"""Dashboard keys page: spending caps set at creation and shown in the list (same operation as REST)."""

from __future__ import annotations

import httpx
import pytest

from tests.adapters.web.helpers import post_form, signup
from tests.support import bearer

pytestmark = pytest.mark.anyio


async def test_key_with_caps_from_the_keys_page(client: httpx.AsyncClient) -> None:
    await signup(client)
    fields = {"name": "capped bot", "scopes": ["wallet:spend", "customer:read"]}
    made = await post_form(client, "/keys", "/keys", {**fields, "spend_limit_daily_cents": "500"})
    assert made.status_code == 201, made.text
    assert "0 / 500 ¢ today" in made.text
    bad = await post_form(client, "/keys", "/keys", {**fields, "spend_limit_total_cents": "ten"})
    assert bad.status_code == 422 and "spending caps are whole numbers of cents" in bad.text
    secret = made.text.split('id="secret">', 1)[1].split("<", 1)[0]
    listed = (await client.get("/api/v1/customers/me/api-keys", headers=bearer(secret))).json()
    assert [(k["name"], k["spend_limit_daily_cents"], k["spend_limit_total_cents"]) for k in listed] == [
        ("capped bot", 500, None)
    ]
