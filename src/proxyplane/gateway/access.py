"""Who may use the gateway: service entries and the lookups the listeners make on every request.

``AccessTable`` is the in-memory implementation; a store-backed cache fills it with ``replace_all`` /
``upsert`` / ``remove``. Entries are immutable: an update replaces the entry, and every lookup sees the
new state at once (per-request auth on HTTP, per-connection on CONNECT/SOCKS5).
"""

from __future__ import annotations

import hmac
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal, Protocol

from .protocol.username import UsernameOptions, parse_username

Kind = Literal["static", "rotating"]
SessionMode = Literal["rotating", "sticky", "pinned"]


@dataclass(frozen=True, slots=True)
class ServiceEntry:
    service_id: str
    kind: Kind
    login: str
    password: str
    exit_ips: Mapping[str, str] = field(default_factory=dict)  # exit IP -> ISO alpha-2 country ("" unknown)
    whitelist: frozenset[str] = frozenset()  # client IPv4 addresses allowed without credentials
    active: bool = True
    session_mode: SessionMode = "rotating"
    pin: str | None = None  # the exit IP of a pinned rotating service
    sticky_ttl: int = 600  # seconds
    max_connections: int = 0  # concurrent client connections; 0 = unlimited
    udp_allowed: bool = False


@dataclass(frozen=True, slots=True)
class Grant:
    """A successful authentication: the service, the username options and the listener kind."""

    service: ServiceEntry
    options: UsernameOptions | None


class AccessProvider(Protocol):
    def static_by_credentials(self, listen_ip: str, login: str, password: str) -> ServiceEntry | None: ...

    def rotating_by_credentials(self, login: str, password: str) -> ServiceEntry | None: ...

    def by_client_ip(self, listen_ip: str | None, client_ip: str) -> ServiceEntry | None: ...

    def get(self, service_id: str) -> ServiceEntry | None: ...

    def listen_ips(self) -> set[str]: ...


class AccessTable:
    """In-memory access table with the indexes the listeners need (all lookups are dict hits)."""

    def __init__(self, entries: Iterable[ServiceEntry] = ()) -> None:
        self._by_id: dict[str, ServiceEntry] = {}
        self._static_by_ip: dict[str, list[ServiceEntry]] = {}
        self._rotating_by_login: dict[str, ServiceEntry] = {}
        self._wl_static: dict[tuple[str, str], ServiceEntry] = {}
        self._wl_rotating: dict[str, ServiceEntry] = {}
        self._listeners: list[Callable[[], None]] = []
        self.version = 0
        self.replace_all(entries)

    # -- writes (the store-backed cache calls these) --
    def replace_all(self, entries: Iterable[ServiceEntry]) -> None:
        self._by_id = {e.service_id: e for e in entries}
        self._reindex()

    def upsert(self, entry: ServiceEntry) -> None:
        self._by_id[entry.service_id] = entry
        self._reindex()

    def remove(self, service_id: str) -> None:
        if self._by_id.pop(service_id, None) is not None:
            self._reindex()

    def on_change(self, callback: Callable[[], None]) -> None:
        """``callback()`` runs after every write (the server uses it to open/close static listeners)."""
        self._listeners.append(callback)

    def _reindex(self) -> None:
        static_by_ip: dict[str, list[ServiceEntry]] = {}
        rotating: dict[str, ServiceEntry] = {}
        wl_static: dict[tuple[str, str], ServiceEntry] = {}
        wl_rotating: dict[str, ServiceEntry] = {}
        # active entries first: a suspended or expired service never shadows a live one sharing its
        # whitelisted client IP (or login); among equals the lowest service_id wins (decisions: Gateway 4)
        for entry in sorted(self._by_id.values(), key=lambda e: (not e.active, e.service_id)):
            if entry.kind == "static":
                for ip in entry.exit_ips:
                    static_by_ip.setdefault(ip, []).append(entry)
                    for client in entry.whitelist:
                        wl_static.setdefault((ip, client), entry)
            else:
                rotating.setdefault(entry.login, entry)
                for client in entry.whitelist:
                    wl_rotating.setdefault(client, entry)
        self._static_by_ip, self._rotating_by_login = static_by_ip, rotating
        self._wl_static, self._wl_rotating = wl_static, wl_rotating
        self.version += 1
        for callback in self._listeners:
            callback()

    # -- reads (the listeners call these) --
    def get(self, service_id: str) -> ServiceEntry | None:
        return self._by_id.get(service_id)

    def entries(self) -> list[ServiceEntry]:
        return list(self._by_id.values())

    def static_by_credentials(self, listen_ip: str, login: str, password: str) -> ServiceEntry | None:
        for entry in self._static_by_ip.get(listen_ip, ()):
            if entry.login == login and hmac.compare_digest(entry.password.encode(), password.encode()):
                return entry
        return None

    def rotating_by_credentials(self, login: str, password: str) -> ServiceEntry | None:
        entry = self._rotating_by_login.get(login)
        if entry is not None and hmac.compare_digest(entry.password.encode(), password.encode()):
            return entry
        return None

    def by_client_ip(self, listen_ip: str | None, client_ip: str) -> ServiceEntry | None:
        if listen_ip is None:
            return self._wl_rotating.get(client_ip)
        return self._wl_static.get((listen_ip, client_ip))

    def listen_ips(self) -> set[str]:
        """IPs static services are reachable on (each gets the static HTTP/SOCKS5 listeners)."""
        return set(self._static_by_ip)


class AuthError(Exception):
    """Authentication refused; ``reason`` is the metering error category."""

    def __init__(self, message: str, reason: str = "auth") -> None:
        super().__init__(message)
        self.reason = reason


def authenticate(access: AccessProvider, static_ip: str | None, client_ip: str,
                 login: str | None, password: str | None) -> Grant:
    """Credentials if given, else the client-IP whitelist (``client_ip`` is only read then).

    ``static_ip`` is the listen IP on a static listener, None on the rotating gateway.
    Raises AuthError (UsernameError for bad username options)."""
    if login is None or password is None:
        entry = access.by_client_ip(static_ip, client_ip)
        if entry is None:
            raise AuthError("proxy authentication required")
        options = None
    elif static_ip is not None:
        entry = access.static_by_credentials(static_ip, login, password)
        options = None
        if entry is None:
            raise AuthError("wrong proxy login or password")
    else:
        entry = access.rotating_by_credentials(login, password)
        options = None
        if entry is None and "-" in login:
            options = parse_username(login)
            entry = access.rotating_by_credentials(options.login, password)
        if entry is None:
            raise AuthError("wrong proxy login or password")
    if not entry.active:
        raise AuthError("service is not active", reason="inactive")
    return Grant(entry, options)
