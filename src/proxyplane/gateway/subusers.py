"""Sub-users of a service in the gateway (issue 18): their entries and the checks made when one connects.

A service entry carries its sub-users (``ServiceEntry.subusers``, loaded with the service: store_load.py).
The access table indexes each as a *derived* service entry (``derive``): the service's entry with the
sub-user's login, password, whitelist and connection limit, the service id ``"<service uuid>/<pk>"``
(``metering_id``) and ``parent`` / ``subuser`` set. Everything keyed by the service id then works per
sub-user without a branch on the hot path: metering rows (the usage sink splits the id: the service's
rows get the traffic, the sub-user's rows too), sticky sessions (two sub-users never share one), the
connection limiter (admission.take_slot takes the service's slot and the sub-user's) and the
descriptor budget. A service without sub-users costs nothing more than before.

Traffic limits: the store's ``limit_reached`` (set by the usage flush: domains/subusers/metering.py), or
the used totals loaded with the entry plus what this node counted since (``Meter.sub_counts``: counted
in total, minus what was flushed before the entry was loaded) reaching a limit. A limit refuses new
connections AND ends the sub-user's open tunnels (``cut_refused``, after every harvest of the meter, i.e.
within a second of the bytes that crossed it on this node, or of the store's change for other nodes'
traffic); so does disabling the sub-user. Plain HTTP requests are checked one by one anyway.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .auth_reasons import AuthFailure
from .subnets import SubnetExits

if TYPE_CHECKING:
    from .access import AccessProvider, ServiceEntry
    from .metering import Meter
    from .protocol.username import UsernameOptions
    from .quotas import QuotaEntry

# per metering id of a sub-user: [bytes counted, requests counted, bytes flushed, requests flushed]
SubCounts = dict[str, list[int]]


@dataclass(slots=True)
class SubuserEntry:
    """One sub-user as loaded from the store (immutable by convention, like ServiceEntry)."""

    pk: int  # service_subusers.id: the key of its usage rows
    subuser_id: str
    login: str
    password: str  # "" when ``sealed`` holds it
    sealed: str | None = None
    whitelist: frozenset[str] = frozenset()
    enabled: bool = True
    limit_reached: bool = False
    limit_bytes: int | None = None
    limit_requests: int | None = None
    used_bytes: int = 0
    used_requests: int = 0
    max_connections: int = 0  # 0: only the service's limit applies
    countries: frozenset[str] | None = None  # lower-case ISO alpha-2 (rotating services); None: any
    baseline: tuple[int, int] = (0, 0)  # this node's flushed (bytes, requests) when the entry was indexed
    max_client_ips: int = 0  # its own anti-sharing limit (client_ips.py); 0: only the service's
    client_ip_policy: str = "refuse_new"
    speed_bps: int = 0  # its own bytes/s cap (speed.py); 0: only the service's


def metering_id(service_id: str, pk: int) -> str:
    return f"{service_id}/{pk}"


def split_id(metering: str) -> tuple[str, int | None]:
    """(service id, sub-user pk or None) of a metering id."""
    service_id, _, pk = metering.partition("/")
    return service_id, (int(pk) if pk.isdigit() else None)


class CountryView(Mapping[str, str]):
    """The exit IPs of a (shared, refreshed in place) rotating pool in the allowed countries only; its
    ``version`` follows the pool's, so the router's cached choices are rebuilt when the pool changes."""

    __slots__ = ("base", "countries")

    def __init__(self, base: Mapping[str, str], countries: frozenset[str]) -> None:
        self.base, self.countries = base, countries

    def __getitem__(self, ip: str) -> str:
        country = self.base[ip]
        if country not in self.countries:
            raise KeyError(ip)
        return country

    def __contains__(self, ip: object) -> bool:
        return self.base.get(ip) in self.countries  # type: ignore[call-overload]

    def __iter__(self) -> Iterator[str]:
        return (ip for ip, country in self.base.items() if country in self.countries)

    def __len__(self) -> int:
        return sum(1 for _ in self)

    @property
    def version(self) -> int:
        return int(getattr(self.base, "version", 0))


def derive(service: ServiceEntry, sub: SubuserEntry, counts: SubCounts) -> ServiceEntry:
    """The entry the listeners see for ``sub``: ``service`` with the sub-user's credentials and limits."""
    from .access import ServiceEntry

    mid = metering_id(service.service_id, sub.pk)
    seen = counts.get(mid)
    sub.baseline = (seen[2], seen[3]) if seen is not None else (0, 0)
    exits: Mapping[str, str] = service.exit_ips
    if sub.countries is not None and service.kind == "rotating":
        if type(exits) is SubnetExits:  # an IPv6 service's subnets in those countries (issue 16)
            exits = SubnetExits(((c, k) for c, k in exits.items() if k in sub.countries), exits.places)
        else:
            exits = CountryView(exits, sub.countries)
    return ServiceEntry(
        mid,
        service.kind,
        sub.login,
        sub.password,
        exits,
        sub.whitelist,
        service.active,
        service.session_mode,
        service.pin,
        service.sticky_ttl,
        sub.max_connections,
        service.udp_allowed,
        sub.sealed,
        speed_bps=sub.speed_bps,  # its own cap: its tunnels take from both buckets (speed.py)
        max_client_ips=sub.max_client_ips,  # its own anti-sharing limit, beside the service's
        client_ip_policy=sub.client_ip_policy,
        parent=service,
        subuser=sub,
        quota=service.quota,  # the service's quota holds for its sub-users' traffic too (quotas.py)
        upstream_pool=service.upstream_pool,
    )


def over_traffic(sub: SubuserEntry | QuotaEntry, counts: SubCounts, mid: str) -> bool:
    """A sub-user's traffic limit, or a service's quota (quotas.QuotaEntry: the same attributes), reached:
    the store says so, or its loaded totals plus what this node counted since (under ``mid``) reach it."""
    if sub.limit_reached:
        return True
    if sub.limit_bytes is None and sub.limit_requests is None:
        return False
    seen = counts.get(mid)
    extra_bytes = extra_requests = 0
    if seen is not None:
        extra_bytes, extra_requests = seen[0] - sub.baseline[0], seen[1] - sub.baseline[1]
    if sub.limit_bytes is not None and sub.used_bytes + extra_bytes >= sub.limit_bytes:
        return True
    return sub.limit_requests is not None and sub.used_requests + extra_requests >= sub.limit_requests


def cut_refused(meter: Meter, access: AccessProvider) -> int:
    """End the open tunnels of sub-users refused now (traffic limit reached, disabled) and of services
    over their quota (quotas.py); the count cut. Each is metered under its reason
    (``subuser_traffic_limit`` / ``subuser_disabled`` / ``quota_exhausted`` / ``insufficient_balance``)
    like a refusal."""
    from .quotas import reason as quota_reason
    from .quotas import refused

    cut = 0
    counts = meter.sub_counts
    for flow in meter.subuser_flows():
        if flow.cut is None:
            continue
        entry = access.get(flow.service_id)
        if entry is None:
            continue  # gone from the table (deleted): left to end by itself
        reason: str | None = quota_reason(entry) if refused(entry, counts) else None
        if reason is None and entry.subuser is not None:
            reason = refusal(entry, None, counts)
        if reason is not None:
            end, flow.cut = flow.cut, None  # once: a flow still closing is not cut (and metered) again
            end()
            meter.record(flow.service_id, flow.host, error=str(reason))
            cut += 1
    return cut


def refusal(entry: ServiceEntry, options: UsernameOptions | None, counts: SubCounts) -> AuthFailure | None:
    """Why a sub-user (``entry``, a derived entry) may not connect now; None when it may."""
    sub = entry.subuser
    if sub is None:
        return None
    if not sub.enabled:
        return AuthFailure.SUBUSER_DISABLED
    if over_traffic(sub, counts, entry.service_id):
        return AuthFailure.SUBUSER_TRAFFIC
    country = options.country if options is not None else None
    if country is not None and sub.countries is not None and country not in sub.countries:
        return AuthFailure.SUBUSER_COUNTRY
    return None
