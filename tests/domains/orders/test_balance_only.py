"""Agents pay from the balance only: place_order(balance_only=True) with a short balance refuses before
any service, IP, deposit or processor checkout exists; the same order without it opens a checkout."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from sqlalchemy import func, select

from proxyplane.core.errors import InsufficientBalance
from proxyplane.domains.orders import service as orders
from proxyplane.platform import Platform
from proxyplane.storage.models import Deposit, Service
from tests.domains.stock.support import fresh_stock
from tests.support import Account

pytestmark = pytest.mark.anyio


class CountingProcessor:
    """The platform's real processor, counting the checkouts it is asked to open."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.checkouts = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def create_checkout(self, *args: Any, **kwargs: Any) -> Any:
        self.checkouts += 1
        return await self.inner.create_checkout(*args, **kwargs)


async def order(platform: Platform, account: Account, processor: Any, balance_only: bool) -> Any:
    async with platform.db.unit_of_work() as uow:
        result = await orders.place_order(
            uow.session,
            platform.secrets,
            processor,
            customer_id=account.customer_id,
            partner_discount_percent=0,
            product_kind="proxy_datacenter",
            geo_source="maxmind",
            period_months=1,
            segments=[("IS", 8)],
            whitelist_ips=["127.0.0.9"],
            use_balance=True,
            payment_method="card",
            idempotency_key=uuid.uuid4().hex,
            balance_only=balance_only,
        )
        await uow.commit()
    return result


async def counts(platform: Platform, account: Account) -> tuple[int, int]:
    async with platform.db.unit_of_work(write=False) as uow:
        services = await uow.session.scalar(
            select(func.count()).select_from(Service).where(Service.customer_id == account.customer_id)
        )
        deposits = await uow.session.scalar(
            select(func.count()).select_from(Deposit).where(Deposit.customer_id == account.customer_id)
        )
    return int(services or 0), int(deposits or 0)


async def test_balance_only_refuses_before_any_checkout(platform: Platform, account: Account) -> None:
    await fresh_stock(platform, "proxy_datacenter", "IS", 10)
    await account.credit(100)
    processor = CountingProcessor(platform.processor())
    with pytest.raises(InsufficientBalance) as refused:
        await order(platform, account, processor, balance_only=True)
    extra = refused.value.extra
    assert extra["balance_cents"] == 100
    assert extra["missing_cents"] == extra["required_cents"] - 100 > 0
    assert processor.checkouts == 0
    assert await counts(platform, account) == (0, 0)

    result = await order(platform, account, processor, balance_only=False)
    assert result.wallet_paid_cents == 100
    assert result.amount_due_cents == extra["missing_cents"]
    assert processor.checkouts == 1
    assert await counts(platform, account) == (1, 1)
