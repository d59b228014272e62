"""Spending the person confirms (issue 21.3): form-mode elicitation with the exact amount in the
2026-07-28 era; declined -> nothing charged; accepted -> charged once, a retry replays; a key that requires
confirmation is refused where the client cannot be asked; a top-up's checkout through URL mode."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from fastapi import FastAPI
from mcp.client.context import ClientRequestContext
from mcp_types import ElicitRequestParams, ElicitRequestURLParams, ElicitResult

from proxyplane.platform import Platform
from tests.adapters.mcp.conftest import mcp_client
from tests.adapters.mcp.test_orders import MIX, balance
from tests.adapters.mcp.test_tools import text
from tests.domains.stock.support import fresh_stock
from tests.support import Account

pytestmark = pytest.mark.anyio
MODERN = "2026-07-28"


class Person:
    """An elicitation callback that answers every question the same way and remembers the questions."""

    def __init__(self, action: str, confirm: bool = True) -> None:
        self.action = action
        self.confirm = confirm
        self.asked: list[ElicitRequestParams] = []

    async def __call__(self, context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        self.asked.append(params)
        if isinstance(params, ElicitRequestURLParams) or self.action != "accept":
            return ElicitResult(action=self.action)  # type: ignore[arg-type]
        return ElicitResult(action="accept", content={"confirm": self.confirm})


def order() -> dict[str, Any]:
    return {**MIX, "whitelist_ips": ["127.0.0.9"], "idempotency_key": uuid.uuid4().hex}


async def confirming_key(account: Account) -> str:
    from proxyplane.core.scopes import ALL_SCOPES
    from proxyplane.domains.apikeys.service import create_key

    async with account.platform.db.unit_of_work() as uow:
        _, raw = await create_key(
            uow.session, account.customer_id, "confirm", frozenset(ALL_SCOPES), confirm_spending=True
        )
        await uow.commit()
    return raw


async def test_declined_charges_nothing_accepted_charges_once(
    app: FastAPI, platform: Platform, account: Account
) -> None:
    await fresh_stock(platform, "proxy_datacenter", "IS", 10)
    await account.credit(100_000)
    key = await account.key()
    body = order()
    no = Person("decline")
    async with mcp_client(app, key, mode=MODERN, elicitation_callback=no) as client:
        quote = await client.call_tool("quote_composite", MIX)
        declined = await client.call_tool("order_composite", {**body, "max_total_cents": 100_000})
        cancelled = await client.call_tool("order_composite", {**order(), "max_total_cents": 100_000})
    assert quote.structured_content is not None
    total = quote.structured_content["total_cents"]
    assert declined.is_error and text(declined).startswith("confirmation_declined: ")
    assert cancelled.is_error and "nothing was charged" in text(cancelled)
    assert await balance(account) == 100_000
    message = no.asked[0].message
    assert f"${total // 100:,}.{total % 100:02d}" in message and f"({total} cents)" in message
    assert "order composite" in message and '"IS"' in message
    yes = Person("accept")
    async with mcp_client(app, key, mode=MODERN, elicitation_callback=yes) as client:
        ok = await client.call_tool("order_composite", {**body, "max_total_cents": 100_000})
        again = await client.call_tool("order_composite", {**body, "max_total_cents": 100_000})
    assert ok.is_error is False, text(ok)
    assert again.structured_content == ok.structured_content
    assert len(yes.asked) == 1  # the retry replays: nothing to confirm, nothing charged again
    assert await balance(account) == 100_000 - total


async def test_unticked_confirmation_is_a_refusal(app: FastAPI, platform: Platform, account: Account) -> None:
    await fresh_stock(platform, "proxy_datacenter", "IS", 10)
    await account.credit(100_000)
    unticked = Person("accept", confirm=False)
    async with mcp_client(app, await account.key(), mode=MODERN, elicitation_callback=unticked) as c:
        refused = await c.call_tool("order_composite", {**order(), "max_total_cents": 100_000})
    assert refused.is_error and text(refused).startswith("confirmation_declined: ")
    assert await balance(account) == 100_000


@pytest.mark.parametrize("mode", ["legacy", MODERN])
async def test_key_requiring_confirmation_refused_without_elicitation(
    app: FastAPI, platform: Platform, account: Account, mode: str
) -> None:
    await account.credit(100_000)
    async with mcp_client(app, await confirming_key(account), mode=mode) as client:
        refused = await client.call_tool("order_composite", {**order(), "max_total_cents": 100_000})
        read = await client.call_tool("get_balance", {})
    assert refused.is_error and text(refused).startswith("confirmation_required: ")
    assert read.is_error is False
    assert await balance(account) == 100_000


async def test_top_up_checkout_goes_through_url_mode(app: FastAPI, account: Account) -> None:
    person = Person("accept")
    args = {"amount_cents": 2500, "payment_method": "card", "idempotency_key": uuid.uuid4().hex}
    async with mcp_client(app, await account.key(), mode=MODERN, elicitation_callback=person) as client:
        deposit = await client.call_tool("init_deposit", args)
    assert deposit.is_error is False, text(deposit)
    assert deposit.structured_content is not None and deposit.structured_content["checkout"] == "accept"
    (asked,) = person.asked
    assert isinstance(asked, ElicitRequestURLParams)
    assert asked.url == deposit.structured_content["checkout_url"] and "$25.00" in asked.message


async def test_keys_show_the_flag_and_pass_it_on(rest: Any, account: Account) -> None:
    from tests.support import bearer

    made = await rest.post(
        "/api/v1/customers/me/api-keys",
        headers=bearer(await account.key()),
        json={"name": "agent", "scopes": ["customer:read", "customer:write"], "confirm_spending": True},
    )
    assert made.status_code == 201, made.text
    assert made.json()["confirm_spending"] is True
    child = await rest.post(
        "/api/v1/customers/me/api-keys",
        headers=bearer(made.json()["secret"]),
        json={"name": "child", "scopes": ["customer:read"]},
    )
    listed = await rest.get("/api/v1/customers/me/api-keys", headers=bearer(made.json()["secret"]))
    assert child.status_code == 201 and child.json()["confirm_spending"] is True  # cannot escape the rule
    flags = {k["name"]: k["confirm_spending"] for k in listed.json()}
    assert flags["agent"] is True and flags["child"] is True and flags["test"] is False
