"""The legacy IP lists and network status of IPv6 services (issue 16): a service holds subnets of routed
prefixes and is reached on the IPv4 rotating endpoint.

- iplist: the `ppr-http` / `ppr-socks` types give the rotating endpoint with the service credentials (as
  for rotating services: usable with `curl -x`, the exits leave from the subnet); the static types
  (`http-ip`, `socks-ip`, `http-auth`) list one line per subnet: the subnet in CIDR form alone (a subnet
  is no address one connects to).
- networkstatus/inactive: the service's subnets that are not served: all while the service is not active,
  otherwise those of a retired prefix and those no live gateway node's local prefixes contain.

`live_node_prefixes` (also the static lists' networkstatus/inactive, lists.py): the prefixes the gateway
nodes published (gateway/local_ips.py writes them; core/address_prefixes.py is what both sides share).
"""

from __future__ import annotations

import ipaddress
from datetime import timedelta

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.core.address_prefixes import STALE, Network, parse_prefixes
from proxyplane.core.clock import utcnow
from proxyplane.domains.stock import subnets
from proxyplane.storage.models.prefixes import StockPrefix
from proxyplane.storage.models.services import Service
from proxyplane.storage.repos import gateway_nodes


async def live_node_prefixes(session: AsyncSession) -> list[Network] | None:
    """The local prefixes of every live gateway node (heartbeat within STALE seconds); None when no node
    is live (then nothing can be said about what is served)."""
    rows = await gateway_nodes.live_prefixes(session, utcnow() - timedelta(seconds=STALE))
    if not rows:
        return None
    return parse_prefixes(text for texts in rows for text in texts)


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
    live = await live_node_prefixes(session)
    local = [n for n in live or () if n.version == 6]
    out = []
    for s in held:
        net = ipaddress.IPv6Network(s.subnet)
        if s.prefix_id in retired:
            out.append(s.subnet)
        elif live is not None and not any(net.subnet_of(n) for n in local):
            out.append(s.subnet)
    return out
