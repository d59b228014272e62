"""Retention of idempotency records (PROXYPLANE_IDEMPOTENCY_RETENTION_DAYS): the renewal job's pass
deletes records older than the window (charging calls' first results and dashboard form tokens) in
bounded batches and keeps the recent ones; a replay within the window still returns the first result."""

from __future__ import annotations

import uuid
from datetime import timedelta

import httpx
import pytest
from sqlalchemy import select, update

from proxyplane.core.clock import utcnow
from proxyplane.jobs import idempotency_prune
from proxyplane.jobs.idempotency_prune import prune_idempotency, retention
from proxyplane.jobs.renewals import run_once
from proxyplane.platform import Platform
from proxyplane.storage.models import IdempotencyRecord
from tests.adapters.rest.test_order import ORDER, body
from tests.domains.stock.support import fresh_stock
from tests.support import Account, bearer

pytestmark = pytest.mark.anyio


async def _age(platform: Platform, customer_id: int, key: str, days: float) -> None:
    async with platform.db.unit_of_work() as uow:
        await uow.session.execute(
            update(IdempotencyRecord)
            .where(IdempotencyRecord.customer_id == customer_id, IdempotencyRecord.key == key)
            .values(created_at=utcnow() - timedelta(days=days))
        )
        await uow.commit()


async def _keys(platform: Platform, customer_id: int) -> set[str]:
    async with platform.db.unit_of_work(write=False) as uow:
        rows = await uow.session.execute(
            select(IdempotencyRecord.key).where(IdempotencyRecord.customer_id == customer_id)
        )
        return set(rows.scalars())


async def _form_tokens(platform: Platform, customer_id: int, ages: dict[str, float]) -> None:
    async with platform.db.unit_of_work() as uow:
        for token, days in ages.items():
            uow.session.add(
                IdempotencyRecord(
                    customer_id=customer_id,
                    operation="web:ticket_reply",
                    key=token,
                    request_hash="",
                    response={},
                    created_at=utcnow() - timedelta(days=days),
                )
            )
        await uow.commit()


async def test_old_records_pruned_recent_kept_and_replayed(
    client: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    await fresh_stock(platform, "proxy_datacenter", "IS", 20)
    key = await account.key()
    await account.credit(1_000_000)
    recent, old = body(count=8), body(count=8)
    first = await client.post(ORDER, json=recent, headers=bearer(key))
    assert first.status_code == 201, first.text
    assert (await client.post(ORDER, json=old, headers=bearer(key))).status_code == 201
    await _age(platform, account.customer_id, recent["idempotency_key"], 29)
    await _age(platform, account.customer_id, old["idempotency_key"], 31)
    await _form_tokens(platform, account.customer_id, {"form-recent": 1, "form-old": 45})

    await run_once(platform)  # the periodic job's pass prunes by the real clock

    assert await _keys(platform, account.customer_id) == {recent["idempotency_key"], "form-recent"}
    bal = (await client.get("/api/v1/customer/wallet/balance", headers=bearer(key))).json()["balance_cents"]
    again = await client.post(ORDER, json=recent, headers=bearer(key))
    assert again.status_code == first.status_code and again.json() == first.json()
    after = (await client.get("/api/v1/customer/wallet/balance", headers=bearer(key))).json()["balance_cents"]
    assert after == bal  # the replay charged nothing


async def test_prune_in_bounded_batches(
    platform: Platform, account: Account, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Seven records aged 10,000 days, a clock 31 days after them: only these are past the window."""
    tokens = {f"batch-{uuid.uuid4().hex}": 10_000.0 for _ in range(7)}
    await _form_tokens(platform, account.customer_id, tokens)
    now = utcnow() - timedelta(days=10_000 - 31)
    monkeypatch.setattr(idempotency_prune, "MAX_BATCHES", 2)
    assert await prune_idempotency(platform.db, now=now, batch=3) == 6  # two batches of three per pass
    assert len(await _keys(platform, account.customer_id)) == 1
    assert await prune_idempotency(platform.db, now=now, batch=3) == 1  # the next pass takes the rest
    assert await _keys(platform, account.customer_id) == set()


def test_retention_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PROXYPLANE_IDEMPOTENCY_RETENTION_DAYS", raising=False)
    assert retention() == timedelta(days=30)
    monkeypatch.setenv("PROXYPLANE_IDEMPOTENCY_RETENTION_DAYS", "90")
    assert retention() == timedelta(days=90)
