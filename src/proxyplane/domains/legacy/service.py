"""What the legacy account API needs beyond the shared domains, kept out of the adapter:

- numeric product ids: 1-3 are the composite kinds (one IP of that kind), 5 the IPv6 one (subnets of the
  proxy_ipv6 prefixes; 5 = its group id, 4 stays free: rotating is catalog only), catalog products are
  101, 102, ... in creation order (inactive ones keep their number, so a number never moves to another
  product);
- the single bound IP (`bindedip` / `setip`) over the v1 whitelist;
- setting a given proxy password;
- the `update_list` throttle clock.
See docs/decisions/legacy.md "Legacy API".
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.core.clock import utcnow
from proxyplane.core.errors import ValidationFailed
from proxyplane.core.security import SecretBox
from proxyplane.domains.proxy import service as proxy
from proxyplane.domains.services import service as services
from proxyplane.storage.models import CatalogProduct, LegacyListUpdate, Service, ServiceWhitelist
from proxyplane.storage.repos import legacy_list_updates as list_updates

COMPOSITE_PRODUCTS: dict[int, str] = {
    1: "proxy_datacenter",
    2: "proxy_isp",
    3: "proxy_personal",
    5: "proxy_ipv6",
}
CATALOG_FIRST_NUMBER = 101
PASSWORD_CHARS = frozenset(chr(c) for c in range(33, 127)) - frozenset(":@/\\\"'`")


async def catalog_numbers(session: AsyncSession) -> dict[int, CatalogProduct]:
    """Numeric id -> catalog product, for every product ever created (active or not)."""
    rows = (
        await session.execute(
            select(CatalogProduct).order_by(CatalogProduct.created_at, CatalogProduct.product_id)
        )
    ).scalars()
    return {CATALOG_FIRST_NUMBER + i: p for i, p in enumerate(rows)}


async def bound_ip(session: AsyncSession, service_id: uuid.UUID) -> str:
    """The bound IP: the newest whitelist entry ("" when the whitelist is empty)."""
    ip = await session.scalar(
        select(ServiceWhitelist.ip)
        .where(ServiceWhitelist.service_id == service_id)
        .order_by(ServiceWhitelist.id.desc())
        .limit(1)
    )
    return str(ip or "")


async def bind_ip(session: AsyncSession, service: Service, ip: str) -> str:
    """Bind `ip`: it replaces the currently bound IP (the newest whitelist entry); other whitelist
    entries made through v1 stay. Binding the IP already bound changes nothing. Goes through the
    whitelist rules of domains/proxy (single IPv4, the slot limit, the gateway's change marker)."""
    ip = proxy.parse_ipv4(ip, "setip")
    current = await bound_ip(session, service.service_id)
    if current == ip:
        return ip
    if current:
        await proxy.whitelist_remove(session, service, current)
    await proxy.whitelist_remove(session, service, ip)
    await proxy.whitelist_add(session, service, ip)
    return ip


def check_proxy_password(password: str) -> None:
    if not 6 <= len(password) <= 64 or not set(password) <= PASSWORD_CHARS:
        raise ValidationFailed(
            "the proxy password must be 6 to 64 printable ASCII characters without spaces, "
            "quotes, backslash, ':', '@' or '/'",
            field="password",
        )


async def set_proxy_password(session: AsyncSession, box: SecretBox, service: Service, password: str) -> None:
    """Set a chosen proxy password (the legacy API sends it; v1 only rotates to a random one)."""
    check_proxy_password(password)
    if services.reveal_password(box, service) != password:
        service.password_enc = box.encrypt(password)
        proxy.touch(service)
    await session.flush()


async def claim_list_update(
    session: AsyncSession, service_id: uuid.UUID, interval: timedelta, now: datetime | None = None
) -> datetime | None:
    """Take the service's update_list slot. None: taken (the caller goes on to update the list);
    otherwise the time of the next permitted update (nothing recorded)."""
    now = now or utcnow()
    if await list_updates.move_if_due(session, service_id, now - interval, now):
        return None
    last = await session.scalar(
        select(LegacyListUpdate.updated_at).where(LegacyListUpdate.service_id == service_id)
    )
    if last is not None:
        return last + interval
    if not await list_updates.add_first(session, service_id, now):
        return now + interval  # a concurrent call took it this instant
    return None
