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

from . import quotas, subusers
from .auth_reasons import REFUSAL_TEXT, AuthFailure
from .client_ips import CLIENT_IP_LIMIT, CLIENT_IP_TEXT, ClientIps
from .protocol.username import UsernameOptions, parse_username
from .quotas import QuotaEntry
from .subusers import SubCounts, SubuserEntry

Kind = Literal["static", "rotating"]
SessionMode = Literal["rotating", "sticky", "pinned"]


@dataclass(slots=True)
class ServiceEntry:
    """One service as the listeners see it. Immutable by convention: an update replaces the entry, never
    mutates it (not ``frozen``: a frozen dataclass is 3.5 times slower to build, a second of a 250,000-
    service cold start)."""

    service_id: str
    kind: Kind
    login: str
    password: str  # "" when ``sealed`` holds it (decrypted on first use: AccessTable.unseal)
    exit_ips: Mapping[str, str] = field(default_factory=dict)  # exit IP -> ISO alpha-2 country ("" unknown)
    whitelist: frozenset[str] = frozenset()  # client IPv4 addresses allowed without credentials
    active: bool = True
    session_mode: SessionMode = "rotating"
    pin: str | None = None  # the exit IP of a pinned rotating service
    sticky_ttl: int = 600  # seconds
    max_connections: int = 0  # concurrent client connections; 0 = unlimited
    udp_allowed: bool = False
    sealed: str | None = None  # the stored ciphertext of the password (a store-loaded entry)
    subusers: tuple[SubuserEntry, ...] = ()  # the service's sub-users (issue 18; gateway/subusers.py)
    parent: ServiceEntry | None = None  # set on a sub-user's derived entry: the service
    subuser: SubuserEntry | None = None  # set on a sub-user's derived entry: the sub-user
    quota: QuotaEntry | None = None  # the service's traffic/request quota (issue 32; gateway/quotas.py)
    upstream_pool: str | None = None  # drawn from this upstream pool, not local exits (upstream_pools.py)
    max_client_ips: int = 0  # distinct client addresses within the window; 0 = unlimited (client_ips.py)
    client_ip_policy: str = "refuse_new"  # or "newest_wins"
    speed_bps: int = 0  # bytes/s cap of the service's tunnels; 0 = unlimited (speed.py)


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

    def static_owners(self, listen_ip: str) -> tuple[ServiceEntry, ...]: ...

    def rotating_by_login(self, login: str) -> ServiceEntry | None: ...

    def subuser_by_credentials(
        self, static_ip: str | None, login: str, password: str
    ) -> ServiceEntry | None: ...

    def subuser_by_client_ip(self, static_ip: str | None, client_ip: str) -> ServiceEntry | None: ...

    sub_counts: SubCounts  # what this node metered per sub-user (shared with the Meter)
    client_ips: ClientIps  # client addresses seen per service with a limit (issue 32.5)


# An index slot: the one entry under a key (the common case, no container), or several in precedence order.
Slot = ServiceEntry | tuple[ServiceEntry, ...]


def _rank(entry: ServiceEntry) -> tuple[bool, str]:
    # active entries first: a suspended or expired service never shadows a live one sharing its
    # whitelisted client IP (or login); among equals the lowest service_id wins (decisions: Gateway 4)
    return (not entry.active, entry.service_id)


def _slot(slot: Slot | None) -> tuple[ServiceEntry, ...]:
    if slot is None:
        return ()
    return slot if type(slot) is tuple else (slot,)  # type: ignore[return-value]


def _add(index: dict[str, Slot], key: str, entry: ServiceEntry) -> None:
    current = index.get(key)
    if current is None:
        index[key] = entry
    else:
        index[key] = tuple(sorted((*_slot(current), entry), key=_rank))


def _drop(index: dict[str, Slot], key: str, service_id: str) -> None:
    rest = tuple(e for e in _slot(index.get(key)) if e.service_id != service_id)
    if not rest:
        index.pop(key, None)
    else:
        index[key] = rest[0] if len(rest) == 1 else rest


class AccessTable:
    """In-memory access table with the indexes the listeners need (all lookups are dict hits).

    Writes are incremental: ``upsert``/``remove``/``apply`` touch only the index keys of the services they
    change (O(that service's exit IPs, whitelist)), never the whole table. Index values are the entry itself
    (no container) unless several services share a key. Memory (tracemalloc, 50,000 services x 4 exit IPs):
    about 0.5 KiB per service (entry, id, login, sealed password) plus 0.15 KiB per exit IP (address string,
    its slot in the service's dict and in the by-IP index); a node at 250,000 services / 1,000,000 IPs
    holds about 550 MiB RSS (bench/scale/run.py).
    """

    def __init__(self, entries: Iterable[ServiceEntry] = ()) -> None:
        self._by_id: dict[str, ServiceEntry] = {}
        self._static_by_ip: dict[str, Slot] = {}
        self._rotating_by_login: dict[str, Slot] = {}
        self._wl_rotating: dict[str, Slot] = {}
        self._listeners: list[Callable[[], None]] = []
        self._plain: dict[str, tuple[str, str]] = {}  # service_id -> (sealed, password) once decrypted
        self.unseal: Callable[[str], str] | None = None  # decrypts ServiceEntry.sealed
        # sub-users' derived entries (gateway/subusers.py) by metering id, by login, by whitelisted client IP
        self._subs: dict[str, tuple[ServiceEntry, ...]] = {}  # service_id -> its sub-users' derived entries
        self._metered: set[str] = set()  # ids of the services with a quota (issue 32: the metrics' count)
        self.client_ips = ClientIps()  # anti-sharing (issue 32.5); the node sets its window
        self._sub_by_id: dict[str, ServiceEntry] = {}
        self._sub_by_login: dict[str, ServiceEntry] = {}
        self._sub_wl: dict[str, Slot] = {}
        self._sub_counts: SubCounts = {}  # shared with the Meter (Context): what this node counted
        self.version = 0
        self.replace_all(entries)

    # -- writes (the store-backed cache calls these) --
    def replace_all(self, entries: Iterable[ServiceEntry]) -> None:
        self._by_id, self._static_by_ip, self._rotating_by_login, self._wl_rotating = {}, {}, {}, {}
        self._plain = {}
        self._subs, self._sub_by_id, self._sub_by_login, self._sub_wl = {}, {}, {}, {}
        for entry in entries:
            self._by_id[entry.service_id] = entry
            self._index(entry)
        self._changed()

    def upsert(self, entry: ServiceEntry) -> None:
        self.apply([entry], ())

    def remove(self, service_id: str) -> None:
        if service_id in self._by_id:
            self.apply((), [service_id])

    def apply(self, upserts: Iterable[ServiceEntry], removals: Iterable[str]) -> None:
        """Replace/add ``upserts`` and drop ``removals`` (service ids); listeners run once."""
        for service_id in removals:
            old = self._by_id.pop(service_id, None)
            if old is not None:
                self._unindex(old)
        for entry in upserts:
            old = self._by_id.get(entry.service_id)
            if old is not None:
                self._unindex(old)
            self._by_id[entry.service_id] = entry
            self._index(entry)
        self._changed()

    def on_change(self, callback: Callable[[], None]) -> None:
        """``callback()`` runs after every write (the server uses it to open/close static listeners)."""
        self._listeners.append(callback)

    @property
    def metered(self) -> int:
        """How many services in the table carry a quota."""
        return len(self._metered)

    @property
    def sub_counts(self) -> SubCounts:
        return self._sub_counts

    @sub_counts.setter
    def sub_counts(self, counts: SubCounts) -> None:
        for key, seen in self._sub_counts.items():  # services' quota keys registered before (quotas.py)
            counts.setdefault(key, seen)
        self._sub_counts = counts

    def _index_subs(self, entry: ServiceEntry) -> None:
        derived = tuple(subusers.derive(entry, sub, self._sub_counts) for sub in entry.subusers)
        self._subs[entry.service_id] = derived
        for d in derived:
            self._sub_by_id[d.service_id] = d
            self._sub_by_login[d.login] = d
            for client in d.whitelist:
                _add(self._sub_wl, client, d)

    def _unindex_subs(self, service_id: str) -> None:
        for d in self._subs.pop(service_id, ()):
            self._sub_by_id.pop(d.service_id, None)
            if self._sub_by_login.get(d.login) is d:
                del self._sub_by_login[d.login]
            for client in d.whitelist:
                _drop(self._sub_wl, client, d.service_id)

    def _index(self, entry: ServiceEntry) -> None:
        if entry.quota is not None:
            quotas.track(entry.quota, self._sub_counts)
            self._metered.add(entry.service_id)
        if entry.subusers:
            self._index_subs(entry)
        if entry.kind == "static":
            by_ip = self._static_by_ip
            if by_ip.keys().isdisjoint(entry.exit_ips.keys()):  # the common case: no other service has them
                by_ip.update(dict.fromkeys(entry.exit_ips, entry))
                return
            for ip in entry.exit_ips:
                if ip in by_ip:
                    _add(by_ip, ip, entry)
                else:
                    by_ip[ip] = entry
        else:
            _add(self._rotating_by_login, entry.login, entry)
            for client in entry.whitelist:
                _add(self._wl_rotating, client, entry)

    def _unindex(self, entry: ServiceEntry) -> None:
        sid = entry.service_id
        self._metered.discard(sid)
        if entry.subusers:
            self._unindex_subs(sid)
        if entry.kind == "static":
            by_ip = self._static_by_ip
            for ip in entry.exit_ips:
                if by_ip.get(ip) is entry:
                    del by_ip[ip]
                else:
                    _drop(by_ip, ip, sid)
        else:
            _drop(self._rotating_by_login, entry.login, sid)
            for client in entry.whitelist:
                _drop(self._wl_rotating, client, sid)

    def _changed(self) -> None:
        self.version += 1
        for callback in self._listeners:
            callback()

    # -- reads (the listeners call these) --
    def get(self, service_id: str) -> ServiceEntry | None:
        """A service's entry, or a sub-user's derived entry by its metering id ("<service>/<pk>")."""
        entry = self._by_id.get(service_id)
        return entry if entry is not None else self._sub_by_id.get(service_id)

    def entries(self) -> list[ServiceEntry]:
        return list(self._by_id.values())

    def __len__(self) -> int:
        return len(self._by_id)

    def _password(self, entry: ServiceEntry) -> str:
        if entry.sealed is None or self.unseal is None:
            return entry.password
        cached = self._plain.get(entry.service_id)
        if cached is not None and cached[0] == entry.sealed:
            return cached[1]
        plain = self.unseal(entry.sealed)
        self._plain[entry.service_id] = (entry.sealed, plain)
        return plain

    def _matches(self, entry: ServiceEntry, password: str) -> bool:
        return hmac.compare_digest(self._password(entry).encode(), password.encode())

    def static_by_credentials(self, listen_ip: str, login: str, password: str) -> ServiceEntry | None:
        for entry in _slot(self._static_by_ip.get(listen_ip)):
            if entry.login == login and self._matches(entry, password):
                return entry
        return None

    def rotating_by_credentials(self, login: str, password: str) -> ServiceEntry | None:
        for entry in _slot(self._rotating_by_login.get(login)):
            return entry if self._matches(entry, password) else None
        return None

    def by_client_ip(self, listen_ip: str | None, client_ip: str) -> ServiceEntry | None:
        if listen_ip is None:
            for entry in _slot(self._wl_rotating.get(client_ip)):
                return entry
            return None
        for entry in _slot(self._static_by_ip.get(listen_ip)):
            if client_ip in entry.whitelist:
                return entry
        return None

    def static_owners(self, listen_ip: str) -> tuple[ServiceEntry, ...]:
        """The static services reachable on ``listen_ip`` (a refusal's candidates; not the hot path)."""
        return _slot(self._static_by_ip.get(listen_ip))

    def rotating_by_login(self, login: str) -> ServiceEntry | None:
        for entry in _slot(self._rotating_by_login.get(login)):
            return entry
        return None

    def subuser_by_credentials(self, static_ip: str | None, login: str, password: str) -> ServiceEntry | None:
        """The derived entry of the sub-user with this login and password (on a static listener: of a
        service reachable on ``static_ip``)."""
        entry = self._sub_by_login.get(login)
        if entry is None or (static_ip is not None and static_ip not in entry.exit_ips):
            return None
        return entry if self._matches(entry, password) else None

    def subuser_by_client_ip(self, static_ip: str | None, client_ip: str) -> ServiceEntry | None:
        for entry in _slot(self._sub_wl.get(client_ip)):
            if (static_ip is None) == (entry.kind == "rotating") and (
                static_ip is None or static_ip in entry.exit_ips
            ):
                return entry
        return None

    def listen_ips(self) -> set[str]:
        """IPs static services are reachable on (each gets the static HTTP/SOCKS5 listeners)."""
        return set(self._static_by_ip)


class AuthError(Exception):
    """Authentication refused; ``reason`` is the metering error category (an AuthFailure value),
    ``service_id`` the service it is counted for when one is known (None: the node's unattributed)."""

    def __init__(
        self, message: str, reason: str = AuthFailure.UNKNOWN_LOGIN, service_id: str | None = None
    ) -> None:
        super().__init__(message)
        self.reason = str(reason)  # a plain str: metered rows and metric labels
        self.service_id = service_id


def refused(reason: AuthFailure, entry: ServiceEntry | None) -> AuthError:
    return AuthError(REFUSAL_TEXT[reason], reason, entry.service_id if entry is not None else None)


def _sole(entries: tuple[ServiceEntry, ...]) -> ServiceEntry | None:
    return entries[0] if len(entries) == 1 else None


def _failure(access: AccessProvider, static_ip: str | None, login: str | None) -> AuthError:
    """Why credentials (or their absence) matched nothing, and whose service it concerns: the service
    of the login (wrong password), else on a static listener the one service owning that IP."""
    if static_ip is not None:
        owners = access.static_owners(static_ip)
        if login is None:
            return refused(AuthFailure.NOT_WHITELISTED, _sole(owners))
        for owner in owners:
            if owner.login == login:
                return refused(AuthFailure.WRONG_PASSWORD, owner)
        return refused(AuthFailure.UNKNOWN_LOGIN, _sole(owners))
    if login is None:
        return refused(AuthFailure.NOT_WHITELISTED, None)
    known = access.rotating_by_login(login)
    return refused(AuthFailure.WRONG_PASSWORD if known is not None else AuthFailure.UNKNOWN_LOGIN, known)


def authenticate(
    access: AccessProvider, static_ip: str | None, client_ip: str, login: str | None, password: str | None
) -> Grant:
    """Credentials if given, else the client-IP whitelist (``client_ip`` is only read then).

    ``static_ip`` is the listen IP on a static listener, None on the rotating gateway.
    Raises AuthError with its AuthFailure reason (UsernameError for bad username options)."""
    if login is None or password is None:
        entry = access.by_client_ip(static_ip, client_ip)
        if entry is None:
            entry = access.subuser_by_client_ip(static_ip, client_ip)  # looked up only on a miss
            if entry is None:
                raise _failure(access, static_ip, None)
        options = None
    elif static_ip is not None:
        entry = access.static_by_credentials(static_ip, login, password)
        options = None
        if entry is None:
            entry = access.subuser_by_credentials(static_ip, login, password)
            if entry is None:
                raise _failure(access, static_ip, login)
    else:
        entry = access.rotating_by_credentials(login, password)
        options = None
        if entry is None:
            entry = access.subuser_by_credentials(None, login, password)
        if entry is None and "-" in login:
            options = parse_username(login)
            entry = access.rotating_by_credentials(options.login, password)
            if entry is None:
                entry = access.subuser_by_credentials(None, options.login, password)
        if entry is None:
            raise _failure(access, None, options.login if options is not None else login)
    if not entry.active:
        raise refused(AuthFailure.SUSPENDED, entry)
    if entry.quota is not None and quotas.refused(entry, access.sub_counts):
        why = quotas.reason(entry)  # quota_exhausted, or insufficient_balance (pay as you go)
        raise AuthError(quotas.text(why), why, entry.service_id)
    if entry.parent is not None and entry.max_client_ips and not access.client_ips.admit(
        entry.service_id, client_ip, entry.max_client_ips, entry.client_ip_policy
    ):  # a sub-user's own limit (its addresses count for its service's too)
        raise AuthError(CLIENT_IP_TEXT, CLIENT_IP_LIMIT, entry.service_id)
    owner = entry.parent or entry
    if owner.max_client_ips and not access.client_ips.admit(
        owner.service_id, client_ip, owner.max_client_ips, owner.client_ip_policy
    ):
        raise AuthError(CLIENT_IP_TEXT, CLIENT_IP_LIMIT, entry.service_id)
    if entry.subuser is not None:
        reason = subusers.refusal(entry, options, access.sub_counts)
        if reason is not None:
            raise refused(reason, entry)
    return Grant(entry, options)
