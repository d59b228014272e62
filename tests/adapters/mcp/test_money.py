"""Money safety over MCP, on a purchase-shaped operation served by the real MCP adapter, invoke() and
wallet: spending tools need an idempotency_key and a price guard; a guard breach or a short balance
charges nothing; agents pay from the balance only; a retry with the same key never charges twice."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import pytest
from fastapi import FastAPI
from pydantic import BaseModel, ConfigDict, Field

from proxyplane.adapters.mcp.server import mount_mcp
from proxyplane.core.scopes import Scope
from proxyplane.domains.wallet import service as wallet
from proxyplane.ops import Caller, Context, Effect, Operation, UndeclaredSpending, invoke
from proxyplane.platform import Platform
from tests.adapters.mcp.conftest import mcp_client
from tests.adapters.mcp.test_tools import text
from tests.support import Account

pytestmark = pytest.mark.anyio


class PurchaseIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    amount_cents: int = Field(gt=0)
    use_balance: bool = False
    idempotency_key: str | None = None


class PurchaseOut(BaseModel):
    charged_cents: int
    amount_due_cents: int


async def purchase(ctx: Context, data: PurchaseIn) -> PurchaseOut:
    """Pays what the balance covers when use_balance is set and leaves the rest due, like an order."""
    pay = (
        min(data.amount_cents, await wallet.balance(ctx.session, ctx.customer_id)) if data.use_balance else 0
    )
    if pay:
        await wallet.debit(ctx.session, ctx.customer_id, pay, "purchase", "test purchase")
    return PurchaseOut(charged_cents=pay, amount_due_cents=data.amount_cents - pay)


class AddonIn(BaseModel):
    kind: str
    expected_price_cents: int
    idempotency_key: str


PURCHASE = Operation(
    name="buy_thing",
    summary="Buy a thing.",
    method="POST",
    path="/things",
    handler=purchase,
    input=PurchaseIn,
    output=PurchaseOut,
    scopes=frozenset({Scope.wallet_spend}),
    effect=Effect.SPENDS_MONEY,
)
ADDON = Operation(
    name="buy_addon_thing",
    summary="Buy an add-on thing at an expected price.",
    method="POST",
    path="/addon-things",
    handler=purchase,
    input=AddonIn,
    output=PurchaseOut,
    scopes=frozenset({Scope.wallet_spend}),
    effect=Effect.SPENDS_MONEY,
)


@pytest.fixture
async def shop(platform: Platform) -> AsyncIterator[FastAPI]:
    """An app whose MCP endpoint serves only the two purchase-shaped operations."""

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with app.state.mcp.run_sessions():
            yield

    app = FastAPI(lifespan=lifespan)
    mount_mcp(app, platform, {PURCHASE.name: PURCHASE, ADDON.name: ADDON})
    async with lifespan(app):
        yield app


async def state(account: Account) -> tuple[int, int]:
    async with account.platform.db.unit_of_work(write=False) as uow:
        balance = await wallet.balance(uow.session, account.customer_id)
        _, entries = await wallet.ledger(uow.session, account.customer_id, 0, 1)
    return balance, entries


async def test_spending_tools_require_key_and_guard(shop: FastAPI, account: Account) -> None:
    async with mcp_client(shop, await account.key()) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    buy = tools["buy_thing"].input_schema
    assert set(buy["required"]) == {"amount_cents", "idempotency_key", "max_total_cents"}
    assert "use_balance" not in buy["properties"]
    assert "SPENDS MONEY" in (tools["buy_thing"].description or "")
    addon = tools["buy_addon_thing"].input_schema
    # every spending tool takes max_total_cents (issue 30.7), also one with its own exact-price field
    assert {"max_total_cents", "expected_price_cents"} <= set(addon["required"])


async def test_price_guard_refusal_charges_nothing(shop: FastAPI, account: Account) -> None:
    await account.credit(1000)
    async with mcp_client(shop, await account.key({"wallet:spend"})) as client:
        refused = await client.call_tool(
            "buy_thing", {"amount_cents": 700, "idempotency_key": "g1", "max_total_cents": 500}
        )
        # the refusal stored nothing under the key: the same key with a guard that fits now works
        accepted = await client.call_tool(
            "buy_thing", {"amount_cents": 700, "idempotency_key": "g1", "max_total_cents": 700}
        )
    assert refused.is_error is True
    assert text(refused).startswith("price_changed: this call would charge 700 cents")
    assert "current_price_cents=700" in text(refused)
    assert accepted.structured_content == {"charged_cents": 700, "amount_due_cents": 0}
    assert await state(account) == (300, 2)


async def test_idempotent_replay_charges_once(shop: FastAPI, account: Account) -> None:
    await account.credit(1000)
    args = {"amount_cents": 400, "idempotency_key": "once", "max_total_cents": 400}
    async with mcp_client(shop, await account.key({"wallet:spend"})) as client:
        first = await client.call_tool("buy_thing", args)
        second = await client.call_tool("buy_thing", args)
        other = await client.call_tool("buy_thing", {**args, "amount_cents": 300})
    assert first.structured_content == {"charged_cents": 400, "amount_due_cents": 0}
    assert second.structured_content == first.structured_content
    assert other.is_error and text(other).startswith("idempotency_key_reused: ")
    assert await state(account) == (600, 2)


async def test_agent_with_short_balance_is_refused_and_nothing_is_charged(
    shop: FastAPI, platform: Platform, account: Account
) -> None:
    await account.credit(300)
    args = {"amount_cents": 1000, "idempotency_key": "short", "max_total_cents": 1000}
    async with mcp_client(shop, await account.key({"wallet:spend"})) as client:
        refused = await client.call_tool("buy_thing", args)
    assert refused.is_error is True
    message = text(refused)
    assert message.startswith("insufficient_balance: the wallet balance is 700 cents short")
    assert "missing_cents=700" in message
    assert "init_deposit" in message
    assert await state(account) == (300, 1)
    # the same purchase over REST may leave a remainder for a processor checkout
    rest = Caller(customer_id=account.customer_id, scopes=frozenset({"wallet:spend"}), channel="rest")
    data = PurchaseIn(amount_cents=1000, use_balance=True, idempotency_key="rest")
    result = await invoke(platform, PURCHASE, rest, data)
    assert result == PurchaseOut(charged_cents=300, amount_due_cents=700)


async def test_spend_without_wallet_spend_scope_is_refused(shop: FastAPI, account: Account) -> None:
    await account.credit(1000)
    async with mcp_client(shop, await account.key({"wallet:read"})) as client:
        refused = await client.call_tool(
            "buy_thing", {"amount_cents": 100, "idempotency_key": "s", "max_total_cents": 100}
        )
    assert refused.is_error is True
    assert "missing_scope" in text(refused) and "wallet:spend" in text(refused)
    assert await state(account) == (1000, 1)


async def test_an_undeclared_spending_operation_is_refused_and_rolled_back(
    platform: Platform, account: Account
) -> None:
    """Any channel: an operation that debits without being declared SPENDS_MONEY charges nothing."""
    await account.credit(1000)
    sneaky = Operation(
        name="sneaky_write",
        summary="Declared as a plain write, but takes money.",
        method="POST",
        path="/sneaky",
        handler=purchase,
        input=PurchaseIn,
        output=PurchaseOut,
        effect=Effect.WRITE,
    )
    rest = Caller(customer_id=account.customer_id, channel="rest")
    with pytest.raises(UndeclaredSpending, match="sneaky_write charged 400 cents"):
        await invoke(platform, sneaky, rest, PurchaseIn(amount_cents=400, use_balance=True))
    assert await state(account) == (1000, 1)
