"""IPv6 exits from a service's subnets (issue 16): no address is configured or stored one by one.

A ``proxy_ipv6`` service holds one or more subnets of a routed prefix (``service_subnets``, e.g. a /64).
Its entry is a rotating entry whose ``exit_ips`` is a ``SubnetExits`` ({subnet CIDR: country}) instead of
{ip: country}; the router (routing.py) then draws exit addresses from the subnets:

- a random address per request/connection (``random.getrandbits`` over the subnet's host bits: 2**64
  addresses of a /64, never the subnet-router anycast address, host bits all zero);
- a sticky session keeps the address it drew; the shared sticky table and the store sync hold it like any
  exit IP (membership is an integer prefix check, ``SubnetPool.__contains__``);
- ``pinned``: the service's ``pin``, an address inside one of its subnets.

The node binds whatever address it drew with IP_FREEBIND (upstream.py, csrc/actions.c): the operator routes
the prefix to the host (``ip -6 route add local 2001:db8::/48 dev lo``), nothing is configured per exit.
"""

from __future__ import annotations

import ipaddress
import random
import socket
import sys
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.storage.models.prefixes import ServiceSubnet
from proxyplane.storage.repos import ip_geo

from .places import Place, Target, fits, place_of

if TYPE_CHECKING:
    from .access import AccessProvider, Grant

NO_IPV6 = "no_ipv6"  # the usage error category: the destination cannot be reached over IPv6
IPV4_DESTINATION = "destination is an IPv4 address; this service's exits are IPv6"
IN_CHUNK = 500

Net = tuple[int, int, str]  # (network as an integer, host bits, country)


def _int(address: str) -> int | None:
    try:
        return int.from_bytes(socket.inet_pton(socket.AF_INET6, address), "big")
    except (OSError, ValueError):
        return None


def _net(cidr: str, country: str) -> Net | None:
    try:
        net = ipaddress.IPv6Network(cidr, strict=False)
    except ValueError:
        return None
    return int(net.network_address), 128 - net.prefixlen, country


class SubnetExits(dict[str, str]):
    """{subnet CIDR: country} of one IPv6 service, with the subnets parsed once (``nets``) and ``places``
    {subnet CIDR: place} of the subnets whose prefix the geo data places (issue 36, gateway/places.py)."""

    __slots__ = ("net_places", "nets", "places", "version")

    def __init__(
        self, subnets: Iterable[tuple[str, str]] = (), located: Mapping[str, Place] | None = None
    ) -> None:
        super().__init__(subnets)
        self.nets: tuple[Net, ...] = tuple(n for n in (_net(c, k) for c, k in self.items()) if n is not None)
        self.places: dict[str, Place] = {c: p for c, p in (located or {}).items() if c in self}
        self.net_places: dict[tuple[int, int], Place] = {}  # by (network, host bits): the router's match
        for cidr, place in self.places.items():
            net = _net(cidr, "")
            if net is not None:
                self.net_places[(net[0], net[1])] = place
        self.version = 0

    def country_of(self, address: str) -> str | None:
        """The country of the subnet holding ``address``; None when no subnet holds it."""
        net = self.holding(address)
        return None if net is None else net[2]

    def holding(self, address: str) -> Net | None:
        """The subnet holding ``address``; None when no subnet holds it."""
        value = _int(address)
        if value is None:
            return None
        for net in self.nets:
            if value >> net[1] == net[0] >> net[1]:
                return net
        return None


class SubnetPool(list[str]):
    """The subnets to draw from (a list of CIDRs, for ``len``), their parsed ``nets``; ``address in pool``
    is True for any address of one of them (a sticky session's address stays valid)."""

    __slots__ = ("nets",)

    def __init__(self, nets: Sequence[Net]) -> None:
        super().__init__(f"{draw_at(n, 0)}/{128 - n[1]}" for n in nets)
        self.nets = tuple(nets)

    def __contains__(self, address: object) -> bool:
        value = _int(address) if isinstance(address, str) else None
        if value is None:
            return False
        return any(value >> bits == network >> bits for network, bits, _ in self.nets)

    def pick(self, rng: random.Random) -> str:
        """A uniformly random address of a random subnet (never host bits all zero when there are any)."""
        nets = self.nets
        net = nets[0] if len(nets) == 1 else nets[rng.randrange(len(nets))]
        bits = net[1]
        if bits == 0:
            return draw_at(net, 0)
        offset = 0
        while offset == 0:
            offset = rng.getrandbits(bits)
        return draw_at(net, offset)


def one_off(grant: Grant) -> bool:
    """True when the router draws a new address from the service's subnets for every request (rotating,
    no session id): an upstream connection from that address is never asked for again, so it is closed
    after its response instead of idling in the keep-alive pool (2**64 keys)."""
    entry = grant.service
    return (
        type(entry.exit_ips) is SubnetExits
        and entry.session_mode == "rotating"
        and (grant.options is None or grant.options.sid is None)
    )


def error_exit(access: AccessProvider, service_id: str, exit_ip: str) -> str:
    """What an upstream failure from ``exit_ip`` is counted under (metering's exit errors, the usage errors
    operation's ``errors_by_exit_ip``): the subnet (CIDR) of the service that holds the address when the
    service draws its exits from subnets, so a rotating IPv6 service has one row per subnet instead of one
    per random address; any other exit (IPv4, an IPv6 exit IP row, a service no longer known) as is."""
    if ":" not in exit_ip:
        return exit_ip
    entry = access.get(service_id)
    exits = entry.exit_ips if entry is not None else None
    if not isinstance(exits, SubnetExits):
        return exit_ip
    net = exits.holding(exit_ip)
    return exit_ip if net is None else f"{draw_at(net, 0)}/{128 - net[1]}"


def draw_at(net: Net, offset: int) -> str:
    return socket.inet_ntop(socket.AF_INET6, (net[0] | offset).to_bytes(16, "big"))


def subnet_pool(
    exits: SubnetExits, country: str | None, local: tuple[tuple[int, int], ...] | None
) -> tuple[SubnetPool, bool]:
    """The subnets of ``exits`` in ``country`` (None: all) and inside the local IPv6 ``local`` ranges
    ((network, mask) integers; None: unknown, all count); the flag says some were left out as non-local."""
    chosen, away = [], False
    for net in exits.nets:
        if country is not None and net[2] != country:
            continue
        if local is not None and not is_local(net, local):
            away = True
            continue
        chosen.append(net)
    return SubnetPool(chosen), away


def subnet_matching(exits: SubnetExits, pool: SubnetPool, target: Target) -> SubnetPool | None:
    """The subnets of ``pool`` whose place fits ``target`` (None: none does)."""
    known = exits.net_places
    chosen = [n for n in pool.nets if (p := known.get((n[0], n[1]))) is not None and fits(p, target)]
    return SubnetPool(chosen) if chosen else None


def is_local(net: Net, ranges: tuple[tuple[int, int], ...]) -> bool:
    """True when the whole subnet lies in one local range (its first and last addresses do)."""
    first, last = net[0], net[0] | ((1 << net[1]) - 1)
    return any(first & mask == network and last & mask == network for network, mask in ranges)


async def load_subnets(session: AsyncSession, ids: list[uuid.UUID] | None) -> dict[Any, SubnetExits]:
    """{service_id: SubnetExits} of the live subnets of ``ids`` (None: every service)."""
    query = (
        select(ServiceSubnet.service_id, ServiceSubnet.subnet, ServiceSubnet.country)
        .where(ServiceSubnet.released_at.is_(None))
        .order_by(ServiceSubnet.id)
    )
    rows: dict[Any, list[tuple[str, str]]] = {}
    conn = await session.connection()
    chunks = [None] if ids is None else [ids[i : i + IN_CHUNK] for i in range(0, len(ids), IN_CHUNK)]
    for chunk in chunks:
        q = query if chunk is None else query.where(ServiceSubnet.service_id.in_(chunk))
        for service_id, subnet, country in (await conn.execute(q)).all():
            key = service_id if isinstance(service_id, uuid.UUID) else uuid.UUID(str(service_id))
            rows.setdefault(key, []).append((subnet, sys.intern((country or "").lower())))
    located: dict[Any, dict[str, Place]] = {}
    if rows:  # issue 36: where each subnet's prefix is (one more select, only with subnets to place)
        keys: dict[str | None, str] = {None: ""}
        for service_id, subnet, region, code, city, asn in await ip_geo.subnet_places(session, ids):
            key = service_id if isinstance(service_id, uuid.UUID) else uuid.UUID(str(service_id))
            located.setdefault(key, {})[subnet] = place_of(keys, region, code, city, asn)
    return {sid: SubnetExits(pairs, located.get(sid)) for sid, pairs in rows.items()}
