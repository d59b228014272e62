"""The dashboard's notification settings page (issue 34): email kinds on/off and the balance threshold,
through the same operations as REST's /customer/me/notifications."""

from __future__ import annotations

import httpx
import pytest

from proxyplane.domains.mail.notify import KINDS
from tests.adapters.web.helpers import csrf_of, signup

pytestmark = pytest.mark.anyio


async def test_choices_saved_and_shown(client: httpx.AsyncClient) -> None:
    await signup(client)
    page = await client.get("/notifications")
    assert page.status_code == 200
    assert page.text.count('type="checkbox" name="email_') == len(KINDS)
    assert page.text.count(" checked") == len(KINDS)  # all on by default
    form = {
        "csrf": csrf_of(page),
        "threshold": "12.50",
        **{f"email_{k}": "1" for k in KINDS if k != "order_paid"},
    }
    saved = await client.post("/notifications", data=form)
    assert saved.status_code == 303
    again = await client.get("/notifications")
    assert (
        again.text.count(" checked") == len(KINDS) - 1 and 'name="email_order_paid" value="1">' in again.text
    )
    assert 'value="12.50"' in again.text
    bad = await client.post("/notifications", data={"csrf": csrf_of(again), "threshold": "lots"})
    assert bad.status_code == 422 and "Enter an amount" in bad.text
