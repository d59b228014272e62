"""storage/paging.page returns exactly the pages of `ORDER BY key DESC OFFSET o LIMIT l` (the query the
lists ran before) at every offset, from either end of the index; ledger, services and invoices lists."""

from __future__ import annotations

import pytest
from sqlalchemy import insert, select

from proxyplane.domains.invoices import service as invoices
from proxyplane.domains.services import service as services
from proxyplane.domains.wallet import service as wallet
from proxyplane.platform import Platform
from proxyplane.storage.models import LedgerEntry, Service
from proxyplane.storage.models.billing import Invoice
from tests.support import Account, make_account

pytestmark = pytest.mark.anyio


async def test_pages_equal_plain_offset_at_every_offset(platform: Platform, account: Account) -> None:
    cid = account.customer_id
    other = (await make_account(platform)).customer_id
    async with platform.db.unit_of_work() as uow:
        for customer, n in ((cid, 23), (other, 5)):  # another customer's rows interleave
            await uow.session.execute(
                insert(LedgerEntry),
                [
                    {"customer_id": customer, "amount_cents": i, "balance_after_cents": i, "kind": "credit"}
                    for i in range(n)
                ],
            )
            await uow.session.execute(
                insert(Service),
                [
                    {
                        "customer_id": customer,
                        "product_kind": "proxy_datacenter",
                        "status": "expired",
                        "login": f"pg{customer}x{i}",
                        "password_enc": "x",
                        "segments": [],
                        "parameters": {},
                    }
                    for i in range(n)
                ],
            )
            await uow.session.execute(
                insert(Invoice),
                [{"customer_id": customer, "kind": "deposit", "total_cents": i} for i in range(n)],
            )
        await uow.commit()
    cases = (
        (LedgerEntry, LedgerEntry.id, lambda s, o, n: wallet.ledger(s, cid, o, n)),
        (Service, Service.number, lambda s, o, n: services.list_for_customer(s, cid, o, n)),
        (Invoice, Invoice.id, lambda s, o, n: invoices.list_for_customer(s, cid, o, n)),
    )
    async with platform.db.unit_of_work(write=False) as uow:
        s = uow.session
        for model, key, listing in cases:
            everything = (
                (await s.execute(select(key).where(model.customer_id == cid).order_by(key.desc())))
                .scalars()
                .all()
            )
            assert len(everything) >= 23
            for limit in (1, 5, 7, 50):
                for offset in range(0, len(everything) + 2):
                    rows, total = await listing(s, offset, limit)
                    assert total == len(everything)
                    assert [getattr(r, key.key) for r in rows] == list(everything[offset : offset + limit]), (
                        model,
                        offset,
                        limit,
                    )
