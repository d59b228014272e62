"""Exit-IP choice and sticky sessions.

Static services leave from the IP the client connected to. Rotating services: mode ``rotating`` picks a
random exit IP per request (HTTP) or per connection (CONNECT, SOCKS5); ``sticky`` keeps a session id (sid)
on one exit IP until its TTL ends or it is rotated; ``pinned`` always uses the service's ``pin``. A sid in
the username makes the request sticky in rotating mode too; ``country`` narrows the pool.
"""

from __future__ import annotations

import random
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass

from .access import Grant, ServiceEntry

DEFAULT_SID = "default"


class RoutingError(Exception):
    """No exit IP can serve this request; ``reason`` is the metering error category."""

    def __init__(self, message: str, reason: str = "routing") -> None:
        super().__init__(message)
        self.reason = reason


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
        # exit-IP pools per (entry, country, family); entries are immutable, so the identity check suffices
        self._pools: dict[tuple[int, str | None, int | None], tuple[ServiceEntry, list[str]]] = {}

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
        if entry.session_mode == "pinned":
            pin = entry.pin
            if pin is None or pin not in entry.exit_ips:
                raise RoutingError("pinned service without a valid pin")
            if country is not None and entry.exit_ips[pin] != country:
                raise RoutingError(f"pinned exit IP is not in country {country}", "geo")
            if family is not None and ip_family(pin) != family:
                raise RoutingError("destination address family differs from the exit IP", "address_family")
            return pin
        pool = self._pool(entry, country, family)
        if sid is None and entry.session_mode == "sticky":
            sid = DEFAULT_SID
        if sid is None:
            return pool[0] if len(pool) == 1 else self._rng.choice(pool)
        return self._sticky(entry, sid, pool, options.ttl_minutes if options is not None else None)

    def _pool(self, entry: ServiceEntry, country: str | None, family: int | None) -> list[str]:
        key = (id(entry), country, family)
        cached = self._pools.get(key)
        if cached is not None and cached[0] is entry:
            return cached[1]
        pool = self._build_pool(entry, country, family)
        if len(self._pools) > 4096:
            self._pools.clear()
        self._pools[key] = (entry, pool)
        return pool

    def _build_pool(self, entry: ServiceEntry, country: str | None, family: int | None) -> list[str]:
        pool = [ip for ip, c in entry.exit_ips.items()
                if (country is None or c == country) and (family is None or ip_family(ip) == family)]
        if not pool:
            if country is not None:
                raise RoutingError(f"no exit IP in country {country}", "geo")
            if family is not None and entry.exit_ips:
                raise RoutingError("no exit IP of the destination's address family", "address_family")
            raise RoutingError("no exit IP for this destination", "no_exit_ip")
        return pool

    def _sticky(self, entry: ServiceEntry, sid: str, pool: list[str], ttl_minutes: int | None) -> str:
        now = self._clock()
        sessions = self._sessions.setdefault(entry.service_id, {})
        session = sessions.get(sid)
        if session is not None and session.expires > now and session.exit_ip in pool:
            return session.exit_ip
        ttl = ttl_minutes * 60 if ttl_minutes is not None else entry.sticky_ttl
        ip = self._rng.choice(pool)
        sessions[sid] = StickySession(entry.service_id, sid, ip, now, now + ttl)
        return ip

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
        pool = [ip for ip in service.exit_ips if ip != session.exit_ip] or list(service.exit_ips)
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
