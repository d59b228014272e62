"""Exit-IP choice and sticky sessions.

Static services leave from the IP the client connected to. Rotating services: mode ``rotating`` picks a
random exit IP per request (HTTP) or per connection (CONNECT, SOCKS5); ``sticky`` keeps a session id (sid)
on one exit IP until its TTL ends or it is rotated; ``pinned`` always uses the service's ``pin``. A sid in
the username makes the request sticky in rotating mode too; ``country`` narrows the pool. A ``strict``
session whose live exit left the pool is refused (502, ``sticky_gone``) instead of moved.

A node only chooses exit IPs local to its host (``set_local``: the prefixes gateway/local_ips.py reads): a
provider's rotating pool may span hosts, and a non-local exit cannot be bound here. The local part of an
exit dict is worked out once per (dict, its version, the prefixes) with integer prefix checks and shared by
every service holding that dict; a service whose exit IPs are all elsewhere is refused with 503 (reason
``not_local``).
"""

from __future__ import annotations

import random
import socket
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from . import places
from .access import Grant, ServiceEntry
from .subnets import IPV4_DESTINATION, NO_IPV6, SubnetExits, SubnetPool, subnet_matching, subnet_pool

DEFAULT_SID = "default"
MOVED_EARLIER = 0.001  # seconds: a moved session's start, before the version it replaces (Router.hold)


class RoutingError(Exception):
    """No exit IP can serve this request; ``reason`` is the metering error category, ``status`` the HTTP
    status of the proxy's reply (502, or 503 when the service's exits are on other hosts)."""

    def __init__(self, message: str, reason: str = "routing", status: int = 502) -> None:
        super().__init__(message)
        self.reason, self.status = reason, status


NOT_LOCAL = "no exit IP of this service on this node"
STICKY_GONE = "sticky_gone"  # the metering category of a strict session whose exit is gone
STRICT_GONE = "strict session: its exit IP is no longer available (a new session id picks another)"
Ranges = tuple[tuple[tuple[int, int], ...], tuple[tuple[int, int], ...]]  # (v4, v6) (network, mask)


class Pool(list[str]):
    """The exit IPs to choose from (a list: ``random.choice``) with set-speed membership (sticky checks)."""

    __slots__ = ("members",)

    def __init__(self, ips: Iterable[str]) -> None:
        super().__init__(ips)
        self.members = frozenset(self)

    def __contains__(self, ip: object) -> bool:
        return ip in self.members

    def pick(self, rng: random.Random) -> str:
        return self[0] if len(self) == 1 else rng.choice(self)


def prefix_ranges(prefixes: Iterable[Any]) -> Ranges:
    """(network, mask) integers of ``ipaddress`` networks, IPv4 and IPv6 apart."""
    nets = list(prefixes)
    return (tuple((int(n.network_address), int(n.netmask)) for n in nets if n.version == 4),
            tuple((int(n.network_address), int(n.netmask)) for n in nets if n.version == 6))


def nonlocal_ips(ips: Iterable[str], ranges: Ranges) -> set[str]:
    """The IPs of ``ips`` in none of ``ranges`` (unparsable ones too)."""
    v4, v6 = ranges
    out = set()
    aton, pton, from_bytes, af6 = socket.inet_aton, socket.inet_pton, int.from_bytes, socket.AF_INET6
    for ip in ips:
        try:
            if ":" in ip:
                value, checks = from_bytes(pton(af6, ip), "big"), v6
            else:
                value, checks = from_bytes(aton(ip), "big"), v4
        except OSError:
            out.add(ip)
            continue
        for network, mask in checks:
            if value & mask == network:
                break
        else:
            out.add(ip)
    return out


@dataclass(slots=True)
class StickySession:
    service_id: str
    sid: str
    exit_ip: str
    started: float  # unix time
    expires: float  # unix time


def ip_family(ip: str) -> int:
    return socket.AF_INET6 if ":" in ip else socket.AF_INET


class Router:
    def __init__(self, clock: Callable[[], float] = time.time, rng: random.Random | None = None) -> None:
        self._clock = clock
        self._rng = rng or random.Random()
        self._sessions: dict[str, dict[str, StickySession]] = {}
        # exit-IP pools per (exit dict, country, family), shared by the services holding one dict (a rotating
        # pool); valid while the dict is the same object at the same version (store_load.ExitPool.version)
        # and the local prefixes are unchanged
        self._pools: dict[tuple[int, str | None, int | None, places.Target | None],
                          tuple[Mapping[str, str], int, Pool | SubnetPool | RoutingError]] = {}
        self._away: dict[int, tuple[Mapping[str, str], int, set[str]]] = {}  # non-local IPs per dict
        self._local: Ranges | None = None  # None: every exit counts as local (no prefixes known)
        self._listeners: list[Callable[[], None]] = []

    def on_change(self, callback: Callable[[], None]) -> None:
        """``callback()`` runs when the local prefixes change (the tunnel engine's decision cache)."""
        self._listeners.append(callback)

    def set_local(self, prefixes: Iterable[Any] | None) -> bool:
        """The host's local address prefixes (``ipaddress`` networks; None: unknown, nothing filtered).
        Cached pools are dropped only when they changed; True then."""
        ranges = None if prefixes is None else prefix_ranges(prefixes)
        if ranges == self._local:
            return False
        self._local = ranges
        self._pools.clear()
        self._away.clear()
        for callback in self._listeners:
            callback()
        return True

    def choose(self, grant: Grant, listen_ip: str | None, family: int | None = None) -> str:
        """The exit IP for one request/connection. ``family`` restricts to IPv4/IPv6 exits (the
        destination is an IP literal of that family)."""
        entry = grant.service
        if entry.kind == "static":
            if listen_ip is None or listen_ip not in entry.exit_ips:
                raise RoutingError("listen address is not an IP of this service")
            if family is not None and ip_family(listen_ip) != family:
                raise RoutingError("destination address family differs from the exit IP", "address_family")
            return listen_ip
        options = grant.options
        country = options.country if options is not None else None
        sid = options.sid if options is not None else None
        place = None
        if options is not None and options.targets_place:
            place = (options.region, options.city, options.asn)
        if entry.session_mode == "pinned":
            if type(entry.exit_ips) is SubnetExits:
                return self._pinned_subnet(entry, entry.exit_ips, country, family)
            pin = entry.pin
            if pin is None or pin not in entry.exit_ips:
                raise RoutingError("pinned service without a valid pin")
            if self._local is not None and pin in self._nonlocal(entry.exit_ips):
                raise RoutingError(NOT_LOCAL, "not_local", 503)
            if country is not None and entry.exit_ips[pin] != country:
                raise RoutingError(f"pinned exit IP is not in country {country}", "geo")
            if place is not None and not places.matching(entry.exit_ips, (pin,), place):
                raise RoutingError("pinned exit IP is not in the username's region, city or ASN", "geo", 407)
            if family is not None and ip_family(pin) != family:
                raise RoutingError("destination address family differs from the exit IP", "address_family")
            return pin
        pool = self._pool(entry, country, family, place)
        if sid is None and entry.session_mode == "sticky":
            sid = DEFAULT_SID
        if sid is None:
            return pool.pick(self._rng)
        if options is None:
            return self._sticky(entry, sid, pool, None)
        return self._sticky(entry, sid, pool, options.ttl_minutes, options.strict)

    def fixed_pool(self, grant: Grant, listen_ip: str | None, family: int | None) -> tuple[str, ...] | None:
        """The exit IPs ``choose`` picks from uniformly for this grant when its pick keeps no state and
        depends on nothing else (static, pinned to a listed IP, rotating without a session over listed
        IPs); None otherwise (sticky sessions, exits drawn from subnets). RoutingError where ``choose``
        refuses (the same checks: ``choose`` itself decides the static and pinned cases)."""
        entry = grant.service
        if entry.kind == "static":
            return (self.choose(grant, listen_ip, family),)
        options = grant.options
        if type(entry.exit_ips) is SubnetExits:
            return None
        if entry.session_mode == "pinned":
            return (self.choose(grant, listen_ip, family),)
        if entry.session_mode == "sticky" or (options is not None and options.sid is not None):
            return None
        place = None
        if options is not None and options.targets_place:
            place = (options.region, options.city, options.asn)
        pool = self._pool(entry, options.country if options is not None else None, family, place)
        return tuple(pool) if type(pool) is Pool else None

    def _pinned_subnet(self, entry: ServiceEntry, exits: SubnetExits, country: str | None,
                       family: int | None) -> str:
        pin = entry.pin
        found = exits.country_of(pin) if pin is not None else None
        if pin is None or found is None:
            raise RoutingError("pinned service without a valid pin")
        if family == socket.AF_INET:
            raise RoutingError(IPV4_DESTINATION, NO_IPV6)
        if country is not None and found != country:
            raise RoutingError(f"pinned exit IP is not in country {country}", "geo")
        if self._local is not None and pin not in subnet_pool(exits, None, self._local[1])[0]:
            raise RoutingError(NOT_LOCAL, "not_local", 503)
        return pin

    def _pool(self, entry: ServiceEntry, country: str | None, family: int | None,
              place: places.Target | None = None) -> Pool | SubnetPool:
        exits = entry.exit_ips
        version = getattr(exits, "version", 0)
        key = (id(exits), country, family, place)
        cached = self._pools.get(key)
        if cached is not None and cached[0] is exits and cached[1] == version:
            found = cached[2]
            if isinstance(found, RoutingError):
                raise RoutingError(str(found), found.reason, found.status)
            return found
        pool: Pool | SubnetPool | RoutingError
        if type(exits) is SubnetExits:
            if place is not None and (text := places.unknown(exits, country, place)) is not None:
                pool = RoutingError(text, "geo", 407)
            else:
                pool = self._subnet_pool(exits, country, family)
                if place is not None:  # the subnets whose prefix lies there (issue 36)
                    narrowed = subnet_matching(exits, pool, place)
                    pool = narrowed or RoutingError(places.refusal(exits, country, place), "geo", 407)
        elif place is not None and (text := places.unknown(exits, country, place)) is not None:
            pool = RoutingError(text, "geo", 407)  # a name the pool has nowhere: O(1), no scan
        else:
            pool = self._build_pool(exits, country, family)
            if place is not None:  # cached with the pool, refusal included: a bad name costs O(1) next time
                fit = places.matching(exits, pool, place)
                pool = Pool(fit) if fit else RoutingError(places.refusal(exits, country, place), "geo", 407)
        if len(self._pools) > 4096:
            self._pools.clear()
        self._pools[key] = (exits, version, pool)
        if isinstance(pool, RoutingError):
            raise pool
        return pool

    def _nonlocal(self, exits: Mapping[str, str]) -> set[str]:
        """The exits of ``exits`` outside the local prefixes (computed once per dict version)."""
        version = getattr(exits, "version", 0)
        cached = self._away.get(id(exits))
        if cached is not None and cached[0] is exits and cached[1] == version:
            return cached[2]
        away = nonlocal_ips(exits, self._local) if self._local is not None else set()
        if len(self._away) > 4096:
            self._away.clear()
        self._away[id(exits)] = (exits, version, away)
        return away

    def _subnet_pool(self, exits: SubnetExits, country: str | None, family: int | None) -> SubnetPool:
        if family == socket.AF_INET:
            raise RoutingError(IPV4_DESTINATION, NO_IPV6)
        pool, away = subnet_pool(exits, country, self._local[1] if self._local is not None else None)
        if not pool:
            if away and subnet_pool(exits, country, None)[0]:
                raise RoutingError(NOT_LOCAL, "not_local", 503)
            if country is not None:
                raise RoutingError(f"no exit IP in country {country}", "geo")
            raise RoutingError("no exit subnet for this service", "no_exit_ip")
        return pool

    def _build_pool(self, exits: Mapping[str, str], country: str | None, family: int | None) -> Pool:
        away = self._nonlocal(exits) if self._local is not None else ()
        pool = Pool(ip for ip, c in exits.items()
                    if (country is None or c == country) and (family is None or ip_family(ip) == family)
                    and ip not in away)
        if not pool:
            if away and any((country is None or c == country) and (family is None or ip_family(ip) == family)
                            for ip, c in exits.items()):
                raise RoutingError(NOT_LOCAL, "not_local", 503)
            if country is not None:
                raise RoutingError(f"no exit IP in country {country}", "geo")
            if family is not None and exits:
                raise RoutingError("no exit IP of the destination's address family", "address_family")
            raise RoutingError("no exit IP for this destination", "no_exit_ip")
        return pool

    def _sticky(self, entry: ServiceEntry, sid: str, pool: Pool | SubnetPool, ttl_minutes: int | None,
                strict: bool = False) -> str:
        now = self._clock()
        sessions = self._sessions.setdefault(entry.service_id, {})
        session = sessions.get(sid)
        if session is not None and session.expires > now:
            if session.exit_ip in pool:
                return session.exit_ip
            if strict:
                raise RoutingError(STRICT_GONE, STICKY_GONE)
        ttl = ttl_minutes * 60 if ttl_minutes is not None else entry.sticky_ttl
        ip = pool.pick(self._rng)
        sessions[sid] = StickySession(entry.service_id, sid, ip, now, now + ttl)
        return ip

    # -- sessions on upstream suppliers (issue 36.4): the value is a supplier's mark, not an exit IP --
    def held(self, service_id: str, sid: str) -> str | None:
        """What the live session (service, sid) holds (an exit IP or a supplier's mark); None: none."""
        session = self._sessions.get(service_id, {}).get(sid)
        return session.exit_ip if session is not None and session.expires > self._clock() else None

    def hold(self, service_id: str, sid: str, value: str, ttl: float) -> None:
        """The session (service, sid) holds ``value`` from now: a new one of ``ttl`` seconds, or a live
        one moved (to another supplier). A moved session keeps its expiry (it does not live longer) and
        counts as started MOVED_EARLIER before the version it replaces: the sticky sync's rule (the
        session started first wins, sticky_sync.py) then makes the latest move win on every worker and
        node over the versions they still hold."""
        now = self._clock()
        sessions = self._sessions.setdefault(service_id, {})
        current = sessions.get(sid)
        started, expires = (current.started - MOVED_EARLIER, current.expires) if current is not None and \
            current.expires > now else (now, now + ttl)
        sessions[sid] = StickySession(service_id, sid, value, started, expires)

    # -- control-plane API --
    def list_sessions(self, service_id: str) -> list[StickySession]:
        """Live sticky sessions of a service (expired ones are dropped)."""
        now = self._clock()
        sessions = self._sessions.get(service_id, {})
        for sid in [s for s, v in sessions.items() if v.expires <= now]:
            del sessions[sid]
        return sorted(sessions.values(), key=lambda s: s.started)

    def rotate(self, service: ServiceEntry, sid: str) -> StickySession | None:
        """Give a live session a new exit IP (different from the old one when the pool allows);
        the TTL window restarts. None if no such session."""
        session = next((s for s in self.list_sessions(service.service_id) if s.sid == sid), None)
        if session is None:
            return None
        local: Pool | SubnetPool
        try:
            local = self._pool(service, None, None)
        except RoutingError:  # none of them local here: any, as before
            exits = service.exit_ips
            local = subnet_pool(exits, None, None)[0] if type(exits) is SubnetExits else Pool(exits)
        if type(local) is SubnetPool:
            pool = [local.pick(self._rng)]  # 2**64 addresses: a new draw differs from the old one
        else:
            pool = [ip for ip in local if ip != session.exit_ip] or list(local)
        if not pool:
            return None
        now = self._clock()
        ttl = session.expires - session.started
        session.exit_ip = self._rng.choice(pool)
        session.started, session.expires = now, now + ttl
        return session

    def delete(self, service_id: str, sid: str) -> bool:
        return self._sessions.get(service_id, {}).pop(sid, None) is not None

    def purge(self, service_id: str) -> int:
        return len(self._sessions.pop(service_id, {}))
