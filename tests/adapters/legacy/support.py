"""Helpers for the legacy API tests: Basic credentials, own catalog products, purchases."""

from __future__ import annotations

import base64
import uuid
from datetime import datetime
from typing import Any

import httpx

from proxyplane.domains.legacy.service import catalog_numbers
from proxyplane.platform import Platform
from proxyplane.storage.models import CatalogProduct
from tests.domains.stock.support import fresh_stock
from tests.support import Account

JSON = "application/json"
TEXT = "text/plain; charset=UTF-8"
GATEWAY = {"host": "127.0.0.1", "http_port": 8080, "https_port": 8443, "socks5_port": 1080}


def basic(email: str, password: str, sep: str = ":") -> dict[str, str]:
    token = base64.b64encode(f"{email}{sep}{password}".encode()).decode()
    return {"Authorization": f"Basic {token}"}


def auth(account: Account, sep: str = ":") -> dict[str, str]:
    return basic(account.email, account.password, sep)


async def add_product(
    platform: Platform,
    kind: str,
    price_cents: int,
    config: dict[str, Any],
    created_at: datetime | None = None,
) -> tuple[int, CatalogProduct]:
    """A catalog product of our own; returns (legacy number, product)."""
    async with platform.db.unit_of_work() as uow:
        product = CatalogProduct(
            name=f"Legacy test {kind} {uuid.uuid4().hex[:8]}",
            description="test",
            kind=kind,
            price_cents=price_cents,
            period_months=1,
            max_connections=50,
            parameters_schema={"type": "object", "properties": {}},
            config=config,
            sort_order=999,
            **({"created_at": created_at} if created_at else {}),
        )
        uow.session.add(product)
        await uow.session.flush()
        numbers = await catalog_numbers(uow.session)
        await uow.commit()
    number = next(n for n, p in numbers.items() if p.product_id == product.product_id)
    return number, product


async def static_product(platform: Platform, country: str = "MD", ips: int = 3) -> tuple[int, CatalogProduct]:
    await fresh_stock(platform, "proxy_datacenter", country, ips * 4)
    return await add_product(platform, "proxy_datacenter", 250, {"ip_count": ips, "country": country})


async def rotating_product(platform: Platform) -> tuple[int, CatalogProduct]:
    config = {"plan": "requests", "quota_requests": 1000, "exit_pool": "proxy_datacenter", "gateway": GATEWAY}
    return await add_product(platform, "proxy_rotating", 400, config)


async def buy(
    client: httpx.AsyncClient, account: Account, pid: int, setip: str | None = "203.0.113.7"
) -> dict:
    body: dict[str, Any] = {"clientid": account.customer_id}
    if setip is not None:
        body["setip"] = setip
    r = await client.post(f"/api/product/{pid}", json=body, headers=auth(account))
    assert r.status_code == 200, r.text
    return r.json()


# GET /api/product/{id}: the document's fields, in its order (byte-exact clients read them positionally)
PRODUCT_FIELDS = [
    "productId",
    "price",
    "groupId",
    "groupName",
    "created_at",
    "product_hidden",
    "group_hidden",
    "product_type",
    "ip_count",
    "update_time",
    "geo",
]
