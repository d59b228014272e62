"""A rotating service drawing from a pool of its own: stock rows on random 127.x addresses (local and
bindable on Linux, and unlikely to clash with the suite's other stock), removed afterwards."""

from __future__ import annotations

import contextlib
import random
import uuid
from collections.abc import AsyncIterator

from sqlalchemy import delete, insert, select, update

from proxyplane.platform import Platform
from proxyplane.storage.models import Service, StockIp


def loopback_addresses(n: int) -> list[str]:
    rng = random.SystemRandom()
    base = f"127.{rng.choice([*range(40, 200), *range(201, 250)])}.{rng.randrange(0, 250)}"
    return [f"{base}.{host}" for host in rng.sample(range(2, 250), n)]


@contextlib.asynccontextmanager
async def own_pool(platform: Platform, service_id: str, exits: dict[str, str]) -> AsyncIterator[str]:
    """``exits`` {address: country (upper case)} become the service's pool; yields the pool's name."""
    pool = "own_" + uuid.uuid4().hex[:8]
    async with platform.db.unit_of_work(write=True) as uow:
        for address, country in exits.items():
            await uow.session.execute(insert(StockIp).values(
                address=address, product_kind=pool, country_maxmind=country, country_ripe=country,
                capacity=100, assigned_count=0))
        svc = uuid.UUID(service_id)
        params = (await uow.session.execute(select(Service.parameters).where(
            Service.service_id == svc))).scalar_one()
        await uow.session.execute(update(Service).where(Service.service_id == svc)
                                  .values(parameters={**(params or {}), "exit_pool": pool}))
        await uow.commit()
    try:
        yield pool
    finally:
        async with platform.db.unit_of_work(write=True) as uow:
            await uow.session.execute(delete(StockIp).where(StockIp.product_kind == pool))
            await uow.commit()
