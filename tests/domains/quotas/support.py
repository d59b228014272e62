"""A metered rotating service (issue 32) of a fresh customer, its quota row, and reads of its state."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import func, select

from proxyplane.domains.quotas import service as quotas
from proxyplane.platform import Platform
from proxyplane.storage.models import Event, Service
from proxyplane.storage.models.gateway import UsageError
from proxyplane.storage.models.quotas import ServiceQuota
from tests.domains.subusers.support import make_service
from tests.support import Account

MIB = 1 << 20


async def metered_service(
    platform: Platform,
    account: Account,
    quota_bytes: int | None = 4 * MIB,
    *,
    period: str = "term",
    gb_price_cents: int = 250,
    quota_requests: int | None = None,
) -> Service:
    params: dict[str, Any] = {"exit_pool": "proxy_datacenter", "quota_period": period}
    params["gb_price_cents"] = gb_price_cents
    if quota_bytes is not None:
        params["quota_bytes"] = quota_bytes
    if quota_requests is not None:
        params["quota_requests"] = quota_requests
    svc = await make_service(platform, account, parameters=params)
    async with platform.db.unit_of_work() as uow:
        assert await quotas.ensure_row(uow.session, await service_of(uow.session, svc.service_id)) is not None
        await uow.commit()
    return svc


async def service_of(session: Any, service_id: uuid.UUID) -> Service:
    return (await session.execute(select(Service).where(Service.service_id == service_id))).scalar_one()


async def quota_row(platform: Platform, service_id: uuid.UUID) -> ServiceQuota:
    async with platform.db.unit_of_work(write=False) as uow:
        row = await uow.session.get(ServiceQuota, service_id)
        assert row is not None
        return row


async def events_of(platform: Platform, customer_id: int, prefix: str = "service.quota") -> list[Event]:
    async with platform.db.unit_of_work(write=False) as uow:
        rows = await uow.session.execute(
            select(Event)
            .where(Event.customer_id == customer_id, Event.type.like(f"{prefix}%"))
            .order_by(Event.created_at)
        )
        return list(rows.scalars())


async def errors_of(platform: Platform, service_id: uuid.UUID) -> dict[str, int]:
    async with platform.db.unit_of_work(write=False) as uow:
        rows = await uow.session.execute(
            select(UsageError.category, func.sum(UsageError.count))
            .where(UsageError.service_id == service_id)
            .group_by(UsageError.category)
        )
        return {c: int(n) for c, n in rows.all()}


async def flush(platform: Platform, service_id: uuid.UUID, nbytes: int, requests: int = 1) -> None:
    """What the usage flush does for a service's minute rows (domains/quotas/metering.apply_usage)."""
    from proxyplane.domains.quotas.metering import apply_usage

    row = {"service_id": service_id, "bytes_up": nbytes // 2, "bytes_down": nbytes - nbytes // 2}
    async with platform.db.unit_of_work() as uow:
        await apply_usage(uow.session, [{**row, "requests": requests}])
        await uow.commit()
