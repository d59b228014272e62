"""What the gateway enforces for a service: its included amounts plus its active add-ons (UDP, whitelist
slots, concurrent connections), read in one pass for many services."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import NamedTuple

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.core.errors import NotFound
from proxyplane.domains.pricing.store import load_pricebooks
from proxyplane.storage.models import Service
from proxyplane.storage.models.billing import ServiceAddon

DEFAULT_BOOK = "proxy_datacenter"  # included whitelist slots of kinds without a price book (rotating)


class Entitlements(NamedTuple):
    udp_allowed: bool
    whitelist_limit: int
    max_connections: int


async def entitlements_many(
    session: AsyncSession, service_ids: Iterable[uuid.UUID]
) -> dict[uuid.UUID, Entitlements]:
    """(udp_allowed, whitelist_limit, max_connections) per service: the service's included amounts plus
    its active add-ons. Unknown ids are left out."""
    ids = list(service_ids)
    if not ids:
        return {}
    books = await load_pricebooks(session)
    rows = (await session.execute(select(Service).where(Service.service_id.in_(ids)))).scalars().all()
    addons = (
        (
            await session.execute(
                select(ServiceAddon).where(ServiceAddon.service_id.in_(ids), ServiceAddon.status == "active")
            )
        )
        .scalars()
        .all()
    )
    out = {}
    for svc in rows:
        mine = [a for a in addons if a.service_id == svc.service_id]
        book = books.get(svc.product_kind) or books[DEFAULT_BOOK]
        out[svc.service_id] = Entitlements(
            udp_allowed=any(a.kind == "udp" for a in mine),
            whitelist_limit=book.included_whitelist_slots
            + sum(int(a.parameters.get("whitelist_slots", 0)) for a in mine),
            max_connections=svc.max_connections + sum(int(a.parameters.get("connections", 0)) for a in mine),
        )
    return out


async def entitlements(session: AsyncSession, service_id: uuid.UUID) -> Entitlements:
    found = await entitlements_many(session, [service_id])
    if service_id not in found:
        raise NotFound(f"service {service_id} not found")
    return found[service_id]
