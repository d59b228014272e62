"""Connection limits of a service: how many concurrent client connections the gateway lets it open.

The plan allows `services.max_connections` (included connections per IP x IPs, set at purchase) plus the
active `extra_connections` add-ons. A customer may set a lower limit of their own (e.g. to protect a
target or to split traffic between agents); it lives in `services.parameters["connection_limit"]` and the
gateway enforces min(allowed, limit) for the whole service, across all its IPs (gateway/store.py). The
per-IP figure is that limit spread evenly over the service's IPs."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.core.clock import utcnow
from proxyplane.core.errors import ValidationFailed
from proxyplane.domains.addons.service import entitlements
from proxyplane.domains.services import service as services
from proxyplane.storage.models import Service

LIMIT_KEY = "connection_limit"


@dataclass(frozen=True)
class Limits:
    ip_count: int
    included_connections: int
    addon_connections: int
    allowed_connections: int
    custom_limit: int | None
    max_connections: int

    @property
    def connections_per_ip(self) -> int | None:
        return self.max_connections // self.ip_count if self.ip_count else None


def custom_limit(svc: Service) -> int | None:
    value = (svc.parameters or {}).get(LIMIT_KEY)
    return int(value) if value is not None else None


def effective(allowed: int, limit: int | None) -> int:
    """What the gateway enforces: the customer's own limit, never above what the plan allows."""
    return allowed if limit is None else min(allowed, limit)


async def limits(session: AsyncSession, svc: Service) -> Limits:
    allowed = (await entitlements(session, svc.service_id)).max_connections
    ips = len(await services.service_ips(session, svc.service_id))
    own = custom_limit(svc)
    return Limits(
        ip_count=ips,
        included_connections=svc.max_connections,
        addon_connections=allowed - svc.max_connections,
        allowed_connections=allowed,
        custom_limit=own,
        max_connections=effective(allowed, own),
    )


async def set_limit(
    session: AsyncSession, svc: Service, max_connections: int | None, connections_per_ip: int | None
) -> Limits:
    """Set the service's own limit (in total, or per IP times its IPs); neither: back to the plan's."""
    if max_connections is not None and connections_per_ip is not None:
        raise ValidationFailed(
            "give max_connections or connections_per_ip, not both", field="max_connections"
        )
    current = await limits(session, svc)
    wanted = max_connections
    if connections_per_ip is not None:
        if not current.ip_count:
            raise ValidationFailed(
                "this service has no IPs of its own; set max_connections instead", field="connections_per_ip"
            )
        wanted = connections_per_ip * current.ip_count
    if wanted is not None and wanted > current.allowed_connections:
        raise ValidationFailed(
            f"{wanted} connections is more than this service allows ({current.allowed_connections}: "
            f"{current.included_connections} included + {current.addon_connections} from add-ons); buy the "
            "extra_connections add-on to raise it",
            field="max_connections",
            allowed_connections=current.allowed_connections,
        )
    params = dict(svc.parameters or {})
    if wanted is None:
        params.pop(LIMIT_KEY, None)
    else:
        params[LIMIT_KEY] = wanted
    svc.parameters = params
    svc.updated_at = utcnow()  # the gateway's change marker
    await session.flush()
    return await limits(session, svc)
