"""A list's first page is one statement when it is the whole list (no count), two when more rows follow
(the page, then the count); totals stay exact (issue 15: lists in one round trip where possible)."""

from __future__ import annotations

import pytest
from sqlalchemy import insert

from proxyplane.domains.invoices import service as invoices
from proxyplane.platform import Platform
from proxyplane.storage.models.billing import Invoice
from tests.domains.orders.test_statement_count import counted
from tests.support import Account

pytestmark = pytest.mark.anyio


async def test_short_first_page_needs_no_count(platform: Platform, account: Account) -> None:
    cid = account.customer_id
    async with platform.db.unit_of_work() as uow:
        await uow.session.execute(
            insert(Invoice), [{"customer_id": cid, "kind": "deposit", "total_cents": i} for i in range(6)]
        )
        await uow.commit()
    async with platform.db.unit_of_work(write=False) as uow:
        await invoices.list_for_customer(uow.session, cid, 0, 1)  # connection and transaction begun
        with counted(platform) as seen:
            rows, total = await invoices.list_for_customer(uow.session, cid, 0, 10)
        assert (len(rows), total, len(seen)) == (6, 6, 1)
        with counted(platform) as seen:
            rows, total = await invoices.list_for_customer(uow.session, cid, 0, 4)
        assert (len(rows), total, len(seen)) == (4, 6, 2)
        assert [r.total_cents for r in rows] == [5, 4, 3, 2]
        with counted(platform) as seen:
            rows, total = await invoices.list_for_customer(uow.session, cid, 4, 4)
        assert ([r.total_cents for r in rows], total, len(seen)) == ([1, 0], 6, 2)  # count, then the page
