"""Dashboard keys page: the "confirm every spend" checkbox sets api_keys.confirm_spending (issue 21.3)."""

from __future__ import annotations

import httpx
import pytest

from tests.adapters.web.helpers import follow, post_form, signup
from tests.support import bearer

pytestmark = pytest.mark.anyio


async def test_confirm_every_spend_checkbox(client: httpx.AsyncClient) -> None:
    await signup(client)
    fields = {"name": "careful bot", "scopes": ["wallet:spend", "customer:read"], "confirm_spending": "1"}
    made = await follow(client, await post_form(client, "/keys", "/keys", fields))
    secret = made.text.split('id="secret">', 1)[1].split("<", 1)[0]
    listed = (await client.get("/api/v1/customers/me/api-keys", headers=bearer(secret))).json()
    assert [(k["name"], k["confirm_spending"]) for k in listed] == [("careful bot", True)]
    assert 'name="confirm_spending"' in made.text
