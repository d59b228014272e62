"""The legacy IP lists and network status of IPv6 services (issue 16): a service holds subnets of routed
prefixes and is reached on the IPv4 rotating endpoint.

- iplist: the `ppr-http` / `ppr-socks` types give the rotating endpoint with the service credentials (as
  for rotating services: usable with `curl -x`, the exits leave from the subnet); the static types
  (`http-ip`, `socks-ip`, `http-auth`) list one line per subnet: the subnet in CIDR form alone (a subnet
  is no address one connects to).
- networkstatus/inactive: the service's subnets that are not served: all while the service is not active,
  otherwise those of a retired prefix and those no live gateway node's local prefixes contain.
"""

from __future__ import annotations

import ipaddress
from datetime import timedelta

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.core.clock import utcnow
from proxyplane.domains.stock import subnets
from proxyplane.gateway.local_ips import STALE, parse_prefixes
from proxyplane.storage.models.gateway_nodes import GatewayNodeAddresses
from proxyplane.storage.models.prefixes import StockPrefix
from proxyplane.storage.models.services import Service


async def unserved_subnets(session: AsyncSession, svc: Service, served: bool) -> list[str]:
    held = await subnets.live_subnets(session, svc.service_id)
    if not served:
        return [s.subnet for s in held]
    retired = set(
        (
            await session.execute(
                select(StockPrefix.id).where(
                    StockPrefix.id.in_({s.prefix_id for s in held}), StockPrefix.retired_at.is_not(None)
                )
            )
        ).scalars()
    )
    fresh = utcnow() - timedelta(seconds=STALE)
    rows = (
        await session.execute(
            select(GatewayNodeAddresses.prefixes).where(GatewayNodeAddresses.updated_at > fresh)
        )
    ).all()
    local = [n for n in parse_prefixes(t for (texts,) in rows for t in (texts or ())) if n.version == 6]
    out = []
    for s in held:
        net = ipaddress.IPv6Network(s.subnet)
        if s.prefix_id in retired:
            out.append(s.subnet)
        elif rows and not any(net.subnet_of(n) for n in local):
            out.append(s.subnet)
    return out
