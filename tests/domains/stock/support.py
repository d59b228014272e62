"""Test helpers: a fresh, exactly known stock for one (pool, country), on unique loopback addresses."""

from __future__ import annotations

import itertools
import random

from sqlalchemy import or_, update

from proxyplane.core.clock import utcnow
from proxyplane.domains.stock.service import StockLine, add_ips
from proxyplane.platform import Platform
from proxyplane.storage.models import StockIp

_base = random.randrange(1 << 20)
_counter = itertools.count()


def unique_loopback() -> str:
    n = (_base + next(_counter)) % (1 << 22) + (1 << 22)  # 127.64.0.0 .. 127.127.255.255
    return f"127.{n >> 16 & 0xFF}.{n >> 8 & 0xFF}.{n & 0xFF}"


async def fresh_stock(
    platform: Platform,
    pool: str,
    country: str,
    count: int,
    *,
    capacity: int | None = None,
    ripe_country: str | None = None,
) -> list[str]:
    """Retire every live IP of `pool` in `country` (either geo source), then add `count` new ones."""
    async with platform.db.unit_of_work() as uow:
        await uow.session.execute(
            update(StockIp)
            .where(
                StockIp.product_kind == pool,
                StockIp.retired_at.is_(None),
                or_(StockIp.country_maxmind == country, StockIp.country_ripe == country),
            )
            .values(retired_at=utcnow())
        )
        addresses = [unique_loopback() for _ in range(count)]
        await add_ips(
            uow.session,
            pool,
            [StockLine(a, country, ripe_country or country) for a in addresses],
            capacity=capacity,
        )
        await uow.commit()
    return addresses
