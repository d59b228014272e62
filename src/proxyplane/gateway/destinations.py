"""Which destinations customers may reach through the proxy (docs/decisions/gateway-destinations.md).

Three rules, checked in this order on the address actually dialed (after DNS resolution: every path
resolves a name once, checks the address it got and connects to that same address literal):

1. The platform's own listeners are never destinations, in any mode: ``own_ports`` (the API, legacy and
   metrics ports, every gateway port, the database port) on any address local to this host (loopback,
   0.0.0.0 / ::, and every address the host can bind: a wildcard listener answers on all of them), and
   ``own_addresses`` (the database's resolved address and port, wherever it is).
2. ``allow_exact``: single (address, port) pairs let through although their network is denied, e.g. the
   demo origin `proxyplane serve` starts itself (gateway/demo_origin.py). Never a pair of rule 1.
3. Networks: every private, link-local, shared, reserved and multicast range is refused (RFC 1918,
   169.254.0.0/16 with the cloud metadata address 169.254.169.254, 100.64.0.0/10, fc00::/7, fe80::/10
   ...), and this host itself (127.0.0.0/8, ::1, 0.0.0.0/8, ::, and on a node every local address
   prefix of the host: ``set_host``) unless the explicit development setting
   ``allow_loopback`` is on (never implied by a command; the tests and the standalone bench gateway set
   it). IPv4-mapped (::ffff:127.0.0.1) and NAT64 (64:ff9b::7f00:1) addresses are judged as the IPv4
   address they carry.

Verdicts of rule 3 are cached per address string (a dict hit on the hot path; the cache is bounded). Rule 1
costs a set lookup per connection, plus, when the port is one of the platform's, one bind() probe per
address and second.
"""

from __future__ import annotations

import ipaddress
import socket
import time
from collections.abc import Callable, Iterable

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

DEFAULT_DENY: tuple[str, ...] = (
    "0.0.0.0/8",  # "this network"
    "10.0.0.0/8",  # RFC 1918
    "100.64.0.0/10",  # carrier-grade NAT (RFC 6598)
    "169.254.0.0/16",  # link-local, cloud metadata 169.254.169.254
    "172.16.0.0/12",  # RFC 1918
    "192.0.0.0/24",  # IETF protocol assignments
    "192.0.2.0/24",  # TEST-NET-1
    "192.168.0.0/16",  # RFC 1918
    "198.18.0.0/15",  # benchmarking
    "198.51.100.0/24",  # TEST-NET-2
    "203.0.113.0/24",  # TEST-NET-3
    "224.0.0.0/4",  # multicast
    "240.0.0.0/4",  # reserved, broadcast
    "::/128",  # unspecified
    "64:ff9b:1::/48",  # local-use NAT64
    "100::/64",  # discard
    "fc00::/7",  # unique local (also AWS fd00:ec2::254 metadata)
    "fe80::/10",  # link-local
    "fec0::/10",  # old site-local
    "ff00::/8",  # multicast
)
# this host: refused unless allow_loopback, whatever the deny-list says (0.0.0.0 and :: dial the host too)
LOOPBACK: tuple[str, ...] = ("127.0.0.0/8", "::1/128", "0.0.0.0/8", "::/128")
NAT64 = ipaddress.ip_network("64:ff9b::/96")
CACHE_MAX = 65536
LOCAL_TTL = 1.0  # seconds an is_local verdict is reused: an address added to the host counts within 1 s


def parse(address: str) -> IPAddress | None:
    """The address a literal dials, IPv4 for an IPv4-mapped or NAT64 one; None when not a literal."""
    try:
        ip = ipaddress.ip_address(address.partition("%")[0])  # drop an IPv6 zone id
    except ValueError:
        return None
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return ip.ipv4_mapped
        if ip in NAT64:
            return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return ip


def is_local(ip: IPAddress) -> bool:
    """Whether dialing ``ip`` reaches this host: loopback, unspecified, or an address the host can bind
    (configured on an interface or in a local route; the kernel's own answer, no cached list)."""
    if ip.is_loopback or ip.is_unspecified:
        return True
    family = socket.AF_INET6 if ip.version == 6 else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_DGRAM) as probe:
            probe.bind((str(ip), 0))
    except OSError:
        return False
    return True


def endpoint(spec: str) -> tuple[str, int]:
    """("127.0.0.1", 8090) from "127.0.0.1:8090" or "[::1]:8090" (an IP literal and a port)."""
    host, sep, port = spec.strip().rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"not an address:port: {spec!r}")
    ip = parse(host.strip("[]"))
    if ip is None:
        raise ValueError(f"not an IP literal: {host!r}")
    return str(ip), int(port)


class DestinationPolicy:
    __slots__ = (
        "networks",
        "allow_loopback",
        "own_ports",
        "own_addresses",
        "allow_exact",
        "host",
        "_cache",
        "_local",
        "_listeners",
    )

    def __init__(
        self,
        deny: Iterable[str] = DEFAULT_DENY,
        allow_loopback: bool = False,
        allow_exact: Iterable[tuple[str, int]] = (),
    ) -> None:
        self._listeners: list[Callable[[], None]] = []
        nets = [ipaddress.ip_network(n, strict=False) for n in deny]
        if not allow_loopback:
            nets += [ipaddress.ip_network(n) for n in LOOPBACK]
        self.networks: tuple[IPNetwork, ...] = tuple(nets)
        self.allow_loopback = allow_loopback
        self.own_ports: set[int] = set()  # rule 1: on any local address
        self.own_addresses: set[tuple[str, int]] = set()  # rule 1: these exactly (their ports in own_ports)
        self.allow_exact: set[tuple[str, int]] = set()
        self.host: tuple[IPNetwork, ...] = ()  # this host's local prefixes (set_host), refused like loopback
        for address, port in allow_exact:
            self.allow(address, port)
        self._cache: dict[str, bool] = {}
        self._local: dict[str, tuple[str, bool, float]] = {}  # address -> (canonical, local, until)

    def on_change(self, callback: Callable[[], None]) -> None:
        """``callback()`` runs after every change of the rules (the tunnel engine's decision cache)."""
        self._listeners.append(callback)

    def _changed(self) -> None:
        for callback in self._listeners:
            callback()

    def add_own(self, listeners: Iterable[tuple[str, int]]) -> None:
        """The platform's listeners: each port on every local address, each non-wildcard address exactly."""
        for host, port in listeners:
            self.own_ports.add(port)
            ip = parse(host)
            if ip is not None and not ip.is_unspecified:
                self.own_addresses.add((str(ip), port))
        self.allow_exact -= {pair for pair in self.allow_exact if pair[1] in self.own_ports}
        self._changed()

    def set_host(self, prefixes: Iterable[IPNetwork] | None) -> None:
        """This host's local address prefixes (the node's LocalAddresses, every 30 s): its own public
        addresses, the exit IPs included, are refused on every port like loopback, unless allow_loopback
        (services bound to 0.0.0.0 would otherwise see customers' connections come from the host itself)."""
        host = () if self.allow_loopback else tuple(prefixes or ())
        if host != self.host:
            self.host = host
            self._cache.clear()
            self._changed()

    def allow(self, address: str, port: int) -> None:
        """Let exactly ``address:port`` through (rule 2), unless it is one of the platform's listeners."""
        ip = parse(address)
        if ip is None:
            raise ValueError(f"not an IP literal: {address!r}")
        if port not in self.own_ports:
            self.allow_exact.add((str(ip), port))
            self._changed()

    def permits(self, address: str, port: int) -> bool:
        """True when ``address`` (an IP literal, the one dialed) may be reached on ``port``."""
        if port in self.own_ports and self.own(address, port):
            return False
        if self.allowed(address):
            return True
        if not self.allow_exact:
            return False
        ip = parse(address)
        return ip is not None and (str(ip), port) in self.allow_exact

    def own(self, address: str, port: int) -> bool:
        """Whether ``address:port`` is (or may be) one of the platform's own listeners (rule 1). What the
        address is (its canonical form, whether it is local: a bind() probe) is remembered for LOCAL_TTL
        seconds: a popular destination on one of the platform's ports (another proxy on :8080) costs one
        probe per second, not one per connection."""
        now = time.monotonic()
        known = self._local.get(address)
        if known is None or known[2] <= now:
            ip = parse(address)
            if ip is None:
                return True
            known = (str(ip), is_local(ip), now + LOCAL_TTL)
            if len(self._local) >= CACHE_MAX:
                self._local.clear()
            self._local[address] = known
        return (known[0], port) in self.own_addresses or (port in self.own_ports and known[1])

    def allowed(self, address: str) -> bool:
        """Rule 3 alone: True when the network of ``address`` (an IP literal) may be reached (every
        connect and datagram goes through ``permits``, which adds rules 1 and 2)."""
        verdict = self._cache.get(address)
        if verdict is None:
            verdict = self._judge(address)
            if len(self._cache) >= CACHE_MAX:
                self._cache.clear()
            self._cache[address] = verdict
        return verdict

    def _judge(self, address: str) -> bool:
        ip = parse(address)
        if ip is None:
            return False
        return not any(
            ip in net for nets in (self.networks, self.host) for net in nets if net.version == ip.version
        )


def deny_list(spec: str) -> tuple[str, ...]:
    """Networks from a comma-separated setting; "default" stands for DEFAULT_DENY. Raises ValueError on
    a malformed network (so a typo stops the node at start instead of opening the network)."""
    out: list[str] = []
    for part in (p.strip() for p in spec.split(",")):
        if part == "default":
            out += DEFAULT_DENY
        elif part:
            out.append(str(ipaddress.ip_network(part, strict=False)))
    return tuple(out)


class BlockedDestination(OSError):
    """Raised instead of connecting to a denied address."""

    def __init__(self, address: str) -> None:
        super().__init__(f"destination {address} is not allowed")
        self.address = address
