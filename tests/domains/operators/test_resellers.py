"""Resellers (issue 33.4) through the registered operations: a reseller creates customers bound to it and
acts on those only (every operation it may run answers another's customer, service or ticket exactly as
one that does not exist: 404); its lists hold its own customers only; its wallet pays for the credit it
gives them at its reseller price, once per once-only key, never below zero (402 insufficient_balance)."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import httpx
import pytest
from pydantic import ValidationError
from sqlalchemy import select, update

from proxyplane.core.errors import (
    AlreadyApplied,
    Conflict,
    Forbidden,
    InsufficientBalance,
    NotFound,
    ValidationFailed,
)
from proxyplane.domains.wallet import service as wallet
from proxyplane.operations import REGISTRY
from proxyplane.ops import Caller
from proxyplane.platform import Platform
from proxyplane.storage.models.resellers import ResellerLedgerEntry
from proxyplane.storage.repos import resellers as repo
from tests.domains.operators.helpers import make_operator, make_reseller, run, unique_operator_email
from tests.domains.operators.test_ticket_desk import open_ticket
from tests.domains.stock.support import fresh_stock
from tests.gateway.test_store_static import buy
from tests.support import Account, unique_email

pytestmark = pytest.mark.anyio
PASSWORD = "correct horse battery"


async def own_customer(platform: Platform, reseller: Caller) -> Account:
    made = await run(platform, "operator_create_customer", reseller, email=unique_email(), password=PASSWORD)
    return Account(platform, made["customer_id"], made["email"], PASSWORD)


async def targets(client: httpx.AsyncClient, platform: Platform, account: Account) -> dict[str, Any]:
    """One customer's every kind of target: its id, email, a service and a ticket."""
    await fresh_stock(platform, "proxy_personal", "US", 1)
    service = await buy(client, platform, account, "Dedicated IP", parameters={})
    ticket_id, _ = await open_ticket(client, account)
    return {
        "customer_id": account.customer_id,
        "email": account.email,
        "service_id": service["service_id"],
        "ticket_id": ticket_id,
    }


def valid_input(name: str, target: dict[str, Any]) -> dict[str, Any]:
    """An input for a bound operation acting on `target`'s customer, valid but for the scope."""
    op = REGISTRY[name]
    extra = {"reason": "r", "cents": 100, "message": "hello", "kind": "password_reset"}
    assert op.input is not None
    fields = {op.bound_by: target[op.bound_by]}
    for field, info in op.input.model_fields.items():
        if info.is_required() and field not in fields:
            fields[field] = extra[field]
    return fields


async def test_every_bound_operation_answers_anothers_customer_as_none(
    client: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    _, _, reseller = await make_reseller(platform, 10)
    mine = await own_customer(platform, reseller)
    foreign = await targets(client, platform, account)
    ghost = {
        "customer_id": 2_000_000_000,
        "email": unique_email(),
        "service_id": str(uuid.uuid4()),
        "ticket_id": str(uuid.uuid4()),
    }
    bound = [name for name, op in REGISTRY.items() if op.reseller and op.bound_by]
    assert len(bound) >= 9
    for name in bound:
        with pytest.raises(NotFound) as other:
            await run(platform, name, reseller, door_key=f"k-{uuid.uuid4()}", **valid_input(name, foreign))
        with pytest.raises(NotFound) as none:
            await run(platform, name, reseller, door_key=f"k-{uuid.uuid4()}", **valid_input(name, ghost))
        # the same words as for a customer that does not exist, but the target's own value
        assert other.value.message.replace(
            str(foreign[REGISTRY[name].bound_by]), "X"
        ) == none.value.message.replace(str(ghost[REGISTRY[name].bound_by]).lower(), "X"), name
    # nothing was done to the other customer, and staff still see it whole
    assert await run(platform, "operator_customer_view", customer_id=account.customer_id)
    page = await run(platform, "operator_customer_view", reseller, customer_id=mine.customer_id)
    assert page["email"] == mine.email


async def test_lists_hold_the_resellers_own_customers_only(
    client: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    _, _, reseller = await make_reseller(platform)
    _, _, rival = await make_reseller(platform)
    mine = await own_customer(platform, reseller)
    theirs = await own_customer(platform, rival)
    own = await targets(client, platform, mine)
    await targets(client, platform, account)
    await targets(client, platform, theirs)
    found = await run(platform, "operator_customer_search", reseller, query="")
    assert [c["customer_id"] for c in found["customers"]] == [mine.customer_id]
    assert (await run(platform, "operator_customer_search", reseller, query=account.email))["customers"] == []
    listed = await run(platform, "operator_service_list", reseller)
    assert [s["service_id"] for s in listed["items"]] == [own["service_id"]] and listed["total"] == 1
    other = await run(platform, "operator_service_list", reseller, customer=str(account.customer_id))
    assert other["items"] == [] and other["total"] == 0
    tickets = await run(platform, "operator_ticket_list", reseller)
    assert [t["ticket_id"] for t in tickets["items"]] == [own["ticket_id"]]
    with pytest.raises(NotFound) as info:  # another's customer named: as for an unknown email
        await run(platform, "operator_ticket_list", reseller, email=account.email)
    assert info.value.message == f"no customer with email {account.email}"
    # acting on its own: suspend, resume, answer, close
    sid = own["service_id"]
    assert (await run(platform, "operator_service_suspend", reseller, service_id=sid))[
        "status"
    ] == "suspended"
    assert (await run(platform, "operator_service_resume", reseller, service_id=sid))["status"] == "active"
    await run(platform, "operator_ticket_reply", reseller, ticket_id=own["ticket_id"], message="on it")
    assert (await run(platform, "operator_ticket_close", reseller, ticket_id=own["ticket_id"]))["status"]
    # what it may not run at all: 403 naming the permission (the overview, a refund, another's view)
    for name, fields in (
        ("operator_overview", {}),
        ("operator_service_refund", {"service_id": sid}),
        ("operator_wallet_debit", {"email": mine.email, "cents": 1, "reason": "r"}),
        ("operator_reseller_list", {}),
    ):
        with pytest.raises(Forbidden):
            await run(platform, name, reseller, **fields)


async def balance_of(platform: Platform, caller: Caller) -> tuple[int, int]:
    """(the reseller's balance row, its ledger's sum)."""
    async with platform.db.unit_of_work() as uow:
        row = await repo.get(uow.session, caller.operator_id)  # type: ignore[arg-type]
        assert row is not None
        return int(row.balance_cents), await repo.ledger_sum(uow.session, caller.operator_id)  # type: ignore[arg-type]


async def customer_balance(platform: Platform, customer_id: int) -> int:
    async with platform.db.unit_of_work() as uow:
        return await wallet.balance(uow.session, customer_id)


async def test_a_credit_charges_the_reseller_its_price_once_and_never_below_zero(platform: Platform) -> None:
    email, _, reseller = await make_reseller(platform, 20)
    mine = await own_customer(platform, reseller)
    await run(
        platform,
        "operator_reseller_credit",
        door_key=f"d-{uuid.uuid4()}",
        operator_email=email,
        cents=1_000,
        reason="sold",
    )
    key = f"k-{uuid.uuid4()}"
    move = {"email": mine.email, "cents": 499, "reason": "top-up"}
    done = await run(platform, "operator_wallet_credit", reseller, door_key=key, **move)
    # 20% off 499 cents is 99.8 cents: the reseller pays 400 (its discount rounded down)
    assert done["balance_cents"] == 499 and done["reseller_charged_cents"] == 400
    assert done["reseller_balance_cents"] == 600
    for _ in range(2):  # a retry with the same key: refused, charged once
        with pytest.raises(AlreadyApplied):
            await run(platform, "operator_wallet_credit", reseller, door_key=key, **move)
    assert await balance_of(platform, reseller) == (600, 600)
    assert await customer_balance(platform, mine.customer_id) == 499
    with pytest.raises(ValidationFailed):  # no once-only key: no charge at all
        await run(platform, "operator_wallet_credit", reseller, **move)
    with pytest.raises(InsufficientBalance) as info:  # 1000 face costs 800 > 600: nothing moves
        await run(
            platform,
            "operator_wallet_credit",
            reseller,
            door_key=f"k-{uuid.uuid4()}",
            email=mine.email,
            cents=1_000,
            reason="x",
        )
    assert info.value.code == "insufficient_balance" and info.value.extra["required_cents"] == 800
    assert await balance_of(platform, reseller) == (600, 600)
    assert await customer_balance(platform, mine.customer_id) == 499

    # five at once, each costing 240 of the 600: two pass, three are refused, never below zero
    async def one() -> object:
        key = f"k-{uuid.uuid4()}"
        return await run(
            platform,
            "operator_wallet_credit",
            reseller,
            door_key=key,
            email=mine.email,
            cents=300,
            reason="c",
        )

    results = await asyncio.gather(*(one() for _ in range(5)), return_exceptions=True)
    assert sum(isinstance(r, dict) for r in results) == 2
    assert all(isinstance(r, dict | InsufficientBalance) for r in results), results
    assert await balance_of(platform, reseller) == (120, 120)
    assert await customer_balance(platform, mine.customer_id) == 499 + 600
    shown = await run(platform, "operator_reseller_wallet", reseller)
    assert shown["balance_cents"] == 120 and shown["customers"] == 1 and shown["discount_percent"] == 20
    assert [e["kind"] for e in shown["ledger"]] == ["customer_credit"] * 3 + ["deposit"]
    assert (await run(platform, "operator_reseller_wallet", operator_email=email))["balance_cents"] == 120
    _, _, rival = await make_reseller(platform)
    with pytest.raises(NotFound):
        await run(platform, "operator_reseller_wallet", rival, operator_email=email)
    with pytest.raises(InsufficientBalance):  # staff cannot take more back than there is either
        await run(platform, "operator_reseller_debit", operator_email=email, cents=121, reason="x")
    # staff credit a reseller's customer as any customer: the reseller is not charged
    await run(platform, "operator_wallet_credit", email=mine.email, cents=50, reason="goodwill")
    assert await balance_of(platform, reseller) == (120, 120)


async def test_the_reseller_ledger_is_append_only(platform: Platform) -> None:
    email, _, _ = await make_reseller(platform)
    await run(
        platform,
        "operator_reseller_credit",
        door_key=f"d-{uuid.uuid4()}",
        operator_email=email,
        cents=10,
        reason="x",
    )
    with pytest.raises(Exception, match="append-only"):
        async with platform.db.unit_of_work() as uow:
            await uow.session.execute(update(ResellerLedgerEntry).values(amount_cents=1_000_000))
            await uow.commit()
    async with platform.db.unit_of_work() as uow:
        amounts = (
            (
                await uow.session.execute(
                    select(ResellerLedgerEntry.amount_cents).where(ResellerLedgerEntry.actor == "cli")
                )
            )
            .scalars()
            .all()
        )
    assert 1_000_000 not in amounts


async def test_a_reseller_is_made_as_one_and_stays_one(platform: Platform) -> None:
    with pytest.raises(ValidationFailed):
        await run(
            platform, "operator_operator_create", operator_email=unique_operator_email(), role="reseller"
        )
    email, _, _ = await make_reseller(platform)
    admin, _, _ = await make_operator(platform, "admin")
    with pytest.raises(Conflict):
        await run(platform, "operator_operator_set_role", operator_email=email, role="admin")
    with pytest.raises(Conflict):
        await run(platform, "operator_operator_set_role", operator_email=admin, role="reseller")
    with pytest.raises(ValidationFailed):  # a staff operator's key is never a reseller's, nor the reverse
        await run(platform, "operator_operator_key_create", operator_email=admin, name="k", role="reseller")
    with pytest.raises(ValidationFailed):
        await run(platform, "operator_operator_key_create", operator_email=email, name="k", role="viewer")
    with pytest.raises(ValidationError):  # the input's bound: 0 to 90 percent
        await run(
            platform, "operator_reseller_create", operator_email=unique_operator_email(), discount_percent=95
        )
    await run(platform, "operator_reseller_set_discount", operator_email=email, discount_percent=35)
    listed = {r["operator_email"]: r for r in (await run(platform, "operator_reseller_list"))["resellers"]}
    assert listed[email]["discount_percent"] == 35 and listed[email]["customers"] == 0
