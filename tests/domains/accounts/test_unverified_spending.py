"""Issue 34: an account whose address is not confirmed cannot spend on any door: a catalog purchase, an
add-on, more IPs (REST), the legacy API's product purchase; its wallet keeps every cent. Once confirmed,
the purchases go through."""

from __future__ import annotations

import uuid

import httpx
import pytest
from sqlalchemy import update

from proxyplane.core.clock import utcnow
from proxyplane.domains.accounts.service import create_customer
from proxyplane.platform import Platform
from proxyplane.storage.models import Customer
from tests.adapters.legacy.support import auth, rotating_product
from tests.support import Account, bearer, unique_email

pytestmark = pytest.mark.anyio
API = "/api/v1"


async def unverified(platform: Platform) -> Account:
    email, password = unique_email(), "correct horse battery"
    async with platform.db.unit_of_work() as uow:
        c = await create_customer(uow.session, email, password, "Unconfirmed", verified=False)
        await uow.commit()
    account = Account(platform, c.id, email, password)
    await account.credit(5_000)
    return account


async def balance(client: httpx.AsyncClient, key: str) -> int:
    r = await client.get(f"{API}/customer/wallet/balance", headers=bearer(key))
    return int(r.json()["balance_cents"])


def refused(r: httpx.Response) -> bool:
    body = r.json()["detail"]
    assert r.status_code == 403 and body["error"] == "forbidden", r.text
    return bool(body["reason"] == "email_unverified")


async def test_unconfirmed_address_spends_nothing_on_any_door(
    platform: Platform, client: httpx.AsyncClient
) -> None:
    account = await unverified(platform)
    key = await account.key()
    pid, product = await rotating_product(platform)
    catalog_id = str(product.product_id)
    buy = {"product_id": catalog_id, "parameters": {}}
    assert refused(await client.post(f"{API}/customer/services", json=buy, headers=bearer(key)))
    some = uuid.uuid4()  # refused before the service is even looked up
    addon = {"addon_type": "udp", "max_total_cents": 5_000, "idempotency_key": "a1"}
    assert refused(
        await client.post(f"{API}/billing/services/{some}/addons", json=addon, headers=bearer(key))
    )
    ips = {"segments": [{"country": "MD", "count": 1}], "idempotency_key": "i1"}
    assert refused(await client.post(f"{API}/billing/services/{some}/add-ips", json=ips, headers=bearer(key)))
    order = {"clientid": account.customer_id, "setip": "203.0.113.7"}
    legacy = await client.post(f"/api/product/{pid}", json=order, headers=auth(account))
    assert legacy.status_code == 422, legacy.text  # the legacy API's one refusal (its byte-exact contract)
    assert await balance(client, key) == 5_000  # nothing taken

    async with platform.db.unit_of_work() as uow:  # the address confirmed: the same purchase goes through
        await uow.session.execute(
            update(Customer).where(Customer.id == account.customer_id).values(email_verified_at=utcnow())
        )
        await uow.commit()
    bought = await client.post(f"{API}/customer/services", json=buy, headers=bearer(key))
    assert bought.status_code == 201, bought.text
    assert await balance(client, key) == 5_000 - product.price_cents
    pid2, product2 = await rotating_product(platform)
    legacy = await client.post(f"/api/product/{pid2}", json=order, headers=auth(account))
    assert legacy.status_code == 200, legacy.text
    assert await balance(client, key) == 5_000 - product.price_cents - product2.price_cents
