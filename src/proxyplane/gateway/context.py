"""What every client connection needs: access lookups, routing, limits, metering, pools, settings."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from . import metrics
from .access import AccessProvider
from .auth_throttle import ProxyAuthThrottle
from .capacity import Capacity
from .deadlines import Deadlines
from .destinations import DEFAULT_DENY, DestinationPolicy
from .limits import ConnectionLimiter
from .metering import Meter
from .routing import Router
from .speed import SpeedLimits
from .subnets import error_exit
from .subusers import cut_refused
from .upstream import UpstreamPool
from .upstream_pools import UpstreamDirectory

# upstream failures attributed to the exit IP they were made from (not dns: that is the name's fault,
# not blocked: the destination policy's)
EXIT_FAULTS = frozenset({"connect", "refused", "timeout"})


@dataclass
class Settings:
    connect_timeout: float = 10.0
    idle_timeout: float = 300.0  # tunnels and idle client connections
    handshake_timeout: float = 30.0  # SOCKS5 negotiation / first HTTP request head
    udp_idle_timeout: float = 120.0
    upstream_idle_timeout: float = 30.0
    max_idle_upstreams_per_destination: int = 64
    sniff_socks_on_http: bool = True  # an HTTP listener also answers SOCKS5 (first byte 0x05)
    sweep_interval: float = 1.0  # how often the timeouts above are checked (see deadlines.py)
    deny_destinations: tuple[str, ...] = DEFAULT_DENY  # networks customers may not reach (destinations.py)
    allow_loopback: bool = False  # development only: let destinations on 127.0.0.0/8 and ::1 through
    # the platform's listeners, never destinations (own_listeners.py); None: as the environment configures
    own_listeners: tuple[tuple[str, int], ...] | None = None
    allow_destinations: tuple[tuple[str, int], ...] = ()  # single address:port let through (demo origin)
    tunnel_engine: bool = True  # plain HTTP and SOCKS5 listeners served by the C engine when it is built
    tunnel_cache: bool = True  # the engine repeats cacheable decisions alone (fastpath.py)
    # the engine's listeners accept a connection once its first bytes arrived (TCP_DEFER_ACCEPT, seconds;
    # 0: off): one wake-up per connection instead of two (docs/decisions/connection-setup.md)
    defer_accept: int = 1
    # a tunnel that relayed this many bytes moves the rest with splice() through the engine's one pipe
    # (csrc/splice.c: ~40 % less CPU per MB); 0: every byte copied through user space
    splice_after: int = 65536
    fd_reserve: int = 0  # descriptors kept back from RLIMIT_NOFILE (0: max(64, limit / 20)); capacity.py
    service_fd_share: float = 0.5  # the fraction of the descriptor budget one service may hold


@dataclass
class Context:
    access: AccessProvider
    router: Router
    limiter: ConnectionLimiter
    meter: Meter
    settings: Settings
    pool: UpstreamPool = field(default_factory=UpstreamPool)
    deadlines: Deadlines = field(default_factory=Deadlines)  # handshake, connect and idle timeouts
    destinations: DestinationPolicy = field(default_factory=DestinationPolicy)  # set from settings
    capacity: Capacity = field(default_factory=Capacity)  # the descriptor budget (set from settings)
    # errors that cannot be attributed to a service (no or wrong credentials, malformed input)
    unattributed_errors: Counter[str] = field(default_factory=Counter)
    # proxy-password guessing slowed per source address, in this process's memory (auth_throttle.py)
    auth_throttle: ProxyAuthThrottle = field(default_factory=ProxyAuthThrottle)
    # upstream pools a rotating product may draw from instead of local exits (issue 36.4)
    upstreams: UpstreamDirectory = field(default_factory=UpstreamDirectory)
    # speed-limited services' token buckets in this process (issue 32.6)
    speed: SpeedLimits = field(default_factory=SpeedLimits)
    # the decision cache's unused slots of a limited service back before a refusal (fastpath.reclaim)
    reclaim: Callable[[str], bool] | None = None

    def __post_init__(self) -> None:
        # sub-users' traffic between flushes: the access table reads what the meter counted (subusers.py)
        self.access.sub_counts = self.meter.sub_counts
        # a sub-user over its traffic limit (or disabled) loses its open tunnels too (subusers.py)
        self.meter.add_check(self.cut_refused)
        # the bytes of tunnels through an upstream supplier, counted for it after every harvest
        self.upstreams.meter = self.meter
        # sessions on suppliers are the router's (shared like others); read at each use: cli/gateway.as_worker
        # gives a worker the host's router after the context is made
        self.upstreams.router_of = lambda: self.router
        self.meter.add_check(self.upstreams.check_flows)

    def cut_refused(self) -> None:
        cut_refused(self.meter, self.access)

    def error(self, service_id: str | None, host: str, reason: str, exit_ip: str = "") -> None:
        """Count an error; upstream failures that say something about the exit IP used (EXIT_FAULTS)
        are attributed to ``exit_ip`` as well (exit-IP health), or to its subnet when the service draws
        IPv6 exits from subnets (subnets.error_exit: one row per subnet, not per random address)."""
        metrics.error(reason)
        if service_id is None:
            self.unattributed_errors[reason] += 1
        elif exit_ip and reason in EXIT_FAULTS:
            self.meter.exit_error(service_id, host, error_exit(self.access, service_id, exit_ip), reason)
        else:
            self.meter.record(service_id, host, error=reason)
