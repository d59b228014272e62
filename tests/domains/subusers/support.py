"""A service row of a fresh customer (what an order leaves behind), with sub-users, for the sub-user tests."""

from __future__ import annotations

import uuid
from typing import Any

from proxyplane.platform import Platform
from proxyplane.storage.models import Service, StockIp
from proxyplane.storage.models.subusers import ServiceSubuser
from tests.domains.stock.support import unique_loopback
from tests.support import Account, make_account


async def make_service(
    platform: Platform,
    account: Account,
    kind: str = "proxy_rotating",
    parameters: dict[str, Any] | None = None,
    max_connections: int = 100,
) -> Service:
    sid = uuid.uuid4()
    async with platform.db.unit_of_work() as uow:
        svc = Service(
            service_id=sid,
            customer_id=account.customer_id,
            product_kind=kind,
            status="active",
            parameters=parameters if parameters is not None else {},
            login=f"svc{sid.hex[:12]}",
            password_enc=platform.secrets.encrypt("service-password"),
            max_connections=max_connections,
        )
        uow.session.add(svc)
        await uow.commit()
    return svc


async def service_with_subusers(
    platform: Platform, limits: list[int | None]
) -> tuple[int, uuid.UUID, list[int]]:
    """(customer id, service id, sub-user pks) of a rotating service with one sub-user per byte limit."""
    account = await make_account(platform)
    svc = await make_service(platform, account)
    async with platform.db.unit_of_work() as uow:
        subs = [
            ServiceSubuser(
                service_id=svc.service_id,
                login=f"su{i}{svc.service_id.hex[:12]}",
                password_enc=platform.secrets.encrypt("pw"),
                traffic_limit_bytes=limit,
            )
            for i, limit in enumerate(limits)
        ]
        uow.session.add_all(subs)
        await uow.session.flush()
        pks = [sub.id for sub in subs]
        await uow.commit()
    return account.customer_id, svc.service_id, pks


async def own_pool(platform: Platform, countries: list[str]) -> str:
    """A rotating exit pool of this test's own (one loopback IP per country): {"exit_pool": <it>} as a
    service parameter gives the service exactly these countries, whatever other tests stock."""
    pool = f"pool_{uuid.uuid4().hex[:12]}"  # a pool name of its own: not a product kind, rows added directly
    async with platform.db.unit_of_work() as uow:
        uow.session.add_all(
            StockIp(address=unique_loopback(), product_kind=pool, country_maxmind=c, country_ripe=c)
            for c in countries
        )
        await uow.commit()
    return pool
