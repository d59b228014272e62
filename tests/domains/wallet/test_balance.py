"""The balance is the newest ledger entry's running balance (issue 15, O(1) in the ledger's size): after
credits, debits, an order paid from the wallet (withdraw + record_withdrawal) and its cancellation's
refund it equals the sum of the ledger's amounts and the guarded wallet row; it is read in one statement
that does not depend on how many entries the customer has."""

from __future__ import annotations

import httpx
import pytest
from sqlalchemy import event, func, select

from proxyplane.domains.wallet import service as wallet
from proxyplane.platform import Platform
from proxyplane.storage.models import LedgerEntry, Wallet
from tests.adapters.rest.test_order import ORDER, body
from tests.domains.stock.support import fresh_stock
from tests.support import Account, bearer, make_account

pytestmark = pytest.mark.anyio


async def _three_ways(platform: Platform, customer_id: int) -> tuple[int, int, int]:
    """(balance(), the ledger's sum, the wallet row)."""
    async with platform.db.unit_of_work(write=False) as uow:
        s = uow.session
        total = await s.scalar(
            select(func.coalesce(func.sum(LedgerEntry.amount_cents), 0)).where(
                LedgerEntry.customer_id == customer_id
            )
        )
        row = await s.scalar(select(Wallet.balance_cents).where(Wallet.customer_id == customer_id))
        return await wallet.balance(s, customer_id), int(total or 0), int(row or 0)


async def test_balance_equals_the_ledger_sum_through_credits_debits_orders_and_refunds(
    client: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    cid = account.customer_id
    assert (await _three_ways(platform, cid))[0] == 0  # no entry yet
    other = (await make_account(platform)).customer_id
    await account.credit(10_000)
    async with platform.db.unit_of_work() as uow:  # interleaved with another customer's entries
        await wallet.credit(uow.session, other, 777, "adjustment", "other")
        await wallet.debit(uow.session, cid, 1_234, "purchase", "a purchase")
        await wallet.credit(uow.session, cid, 34, "refund", "part of it back")
        await uow.commit()
    assert await _three_ways(platform, cid) == (8_800, 8_800, 8_800)
    assert await _three_ways(platform, other) == (777, 777, 777)

    key = await account.key()
    await fresh_stock(platform, "proxy_datacenter", "IS", 10)
    r = await client.post(ORDER, json=body(count=8), headers=bearer(key))
    assert r.status_code == 201, r.text
    after_order = await _three_ways(platform, cid)
    assert after_order == (8_800 - r.json()["total_cents"],) * 3
    sid = r.json()["service"]["service_id"]
    r = await client.post(f"/api/v1/customer/services/{sid}/cancel", headers=bearer(key))
    assert r.status_code == 200, r.text
    refunded = await _three_ways(platform, cid)
    assert refunded[0] == refunded[1] == refunded[2] > after_order[0]
    got = await client.get("/api/v1/customer/wallet/balance", headers=bearer(key))
    assert got.json()["balance_cents"] == refunded[0]


async def test_balance_is_one_statement_whatever_the_ledger_size(
    platform: Platform, account: Account
) -> None:
    statements: list[str] = []

    def seen(conn, cursor, statement, *args) -> None:  # noqa: ANN001
        statements.append(statement)

    engine = platform.db.engine.sync_engine
    for credits in (1, 40):
        for _ in range(credits):
            await account.credit(5)
        async with platform.db.unit_of_work(write=False) as uow:
            event.listen(engine, "before_cursor_execute", seen)
            try:
                statements.clear()
                got = await wallet.balance(uow.session, account.customer_id)
            finally:
                event.remove(engine, "before_cursor_execute", seen)
        assert got == (await _three_ways(platform, account.customer_id))[1]
        assert len(statements) == 1 and "sum(" not in statements[0].lower()
