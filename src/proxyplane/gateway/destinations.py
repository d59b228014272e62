"""Which destination addresses customers may reach through the proxy.

A provider must not let customers into its own network: by default every private, link-local, shared,
reserved and multicast range is refused (RFC 1918, 169.254.0.0/16 with the cloud metadata address
169.254.169.254, 100.64.0.0/10, fc00::/7, fe80::/10 ...), and loopback too unless the development
setting ``allow_loopback`` is on (the embedded ``proxyplane serve``, the standalone bench gateway and
the tests turn it on: all demo traffic is on 127.0.0.0/8). The check is made on the address actually
connected to, i.e. after DNS resolution, so a public name that resolves to 10.0.0.1 is refused as well.
IPv4-mapped IPv6 addresses (::ffff:10.0.0.1) are judged as the IPv4 address they carry.

Verdicts are cached per address string (a dict hit on the hot path; the cache is bounded).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

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
LOOPBACK: tuple[str, ...] = ("127.0.0.0/8", "::1/128")
CACHE_MAX = 65536


class DestinationPolicy:
    __slots__ = ("networks", "allow_loopback", "_cache")

    def __init__(self, deny: Iterable[str] = DEFAULT_DENY, allow_loopback: bool = False) -> None:
        nets = [ipaddress.ip_network(n, strict=False) for n in deny]
        if not allow_loopback:
            nets += [ipaddress.ip_network(n) for n in LOOPBACK]
        self.networks: tuple[IPNetwork, ...] = tuple(nets)
        self.allow_loopback = allow_loopback
        self._cache: dict[str, bool] = {}

    def allowed(self, address: str) -> bool:
        """True when ``address`` (an IP literal, as connected to) may be reached."""
        verdict = self._cache.get(address)
        if verdict is None:
            verdict = self._judge(address)
            if len(self._cache) >= CACHE_MAX:
                self._cache.clear()
            self._cache[address] = verdict
        return verdict

    def _judge(self, address: str) -> bool:
        try:
            ip = ipaddress.ip_address(address.partition("%")[0])  # drop an IPv6 zone id
        except ValueError:
            return False
        if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped
        return not any(ip in net for net in self.networks if net.version == ip.version)


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
