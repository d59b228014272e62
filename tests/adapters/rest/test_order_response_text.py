"""An order's REST body is dumped once (issue 15): the JSON text stored with its idempotency record is the
response body itself when the output model dumps the same by alias or not (ops.dumped_json); a model with
an alias keeps its by-alias dump apart. Bytes are what they were: the body is the model's by-alias dump."""

from __future__ import annotations

import uuid

import httpx
import pytest
from pydantic import BaseModel, Field
from sqlalchemy import select

from proxyplane.domains.orders.ops import OrderOut
from proxyplane.ops import _dump_is_by_alias
from proxyplane.platform import Platform
from proxyplane.storage.models import IdempotencyRecord
from tests.domains.stock.support import fresh_stock
from tests.support import Account, bearer

pytestmark = pytest.mark.anyio


class _Aliased(BaseModel):
    value: int = Field(serialization_alias="Value")


class _Nested(BaseModel):
    inner: _Aliased


async def test_the_body_is_the_stored_text_and_the_by_alias_dump(
    client: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    await fresh_stock(platform, "proxy_datacenter", "IS", 10)
    key = await account.key()
    await account.credit(5_000)
    idem = uuid.uuid4().hex
    order = {
        "product_kind": "proxy_datacenter",
        "period_months": 1,
        "segments": [{"country": "IS", "count": 8}],
        "whitelist_ips": ["127.0.0.9"],
        "use_balance": True,
        "idempotency_key": idem,
    }
    first = await client.post("/api/v1/billing/composite/order", json=order, headers=bearer(key))
    assert first.status_code == 201
    assert (
        first.content == OrderOut.model_validate_json(first.content).model_dump_json(by_alias=True).encode()
    )
    async with platform.db.unit_of_work(write=False) as uow:
        stored = await uow.session.scalar(
            select(IdempotencyRecord.response).where(
                IdempotencyRecord.customer_id == account.customer_id, IdempotencyRecord.key == idem
            )
        )
    assert OrderOut.model_validate(stored) == OrderOut.model_validate_json(first.content)
    again = await client.post("/api/v1/billing/composite/order", json=order, headers=bearer(key))
    assert again.status_code == 201 and again.content == first.content  # the replay: the same bytes


def test_only_models_without_aliases_share_the_text() -> None:
    assert _dump_is_by_alias(OrderOut)
    assert not _dump_is_by_alias(_Aliased)
    assert not _dump_is_by_alias(_Nested)
