"""Address prefixes that gateway nodes publish (each node's host-local prefixes, gateway/local_ips.py)
and what the control plane reads from them (the legacy networkstatus/inactive, domains/legacy/): parsing
the stored texts, the IPs outside a set of prefixes, and how long a node's published row counts as live.
Shared by both sides, so neither imports the other (issue 31.4)."""

from __future__ import annotations

import contextlib
import ipaddress
import socket
from collections.abc import Iterable

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
STALE = 90.0  # seconds: a node's row whose heartbeat is older than this is not live


def parse_prefixes(texts: Iterable[str]) -> list[Network]:
    """The prefixes among `texts` (unparsable ones are left out)."""
    out = []
    for text in texts:
        with contextlib.suppress(ValueError):
            out.append(ipaddress.ip_network(text, strict=False))
    return out


def outside(ips: Iterable[str], prefixes: list[Network]) -> list[str]:
    """The IPs contained in none of ``prefixes`` (unparsable ones count as outside)."""
    ranges = {
        4: [(int(n.network_address), int(n.netmask)) for n in prefixes if n.version == 4],
        6: [(int(n.network_address), int(n.netmask)) for n in prefixes if n.version == 6],
    }
    out = []
    for ip in ips:
        try:
            if ":" in ip:
                value, checks = int.from_bytes(socket.inet_pton(socket.AF_INET6, ip), "big"), ranges[6]
            else:
                value, checks = int.from_bytes(socket.inet_aton(ip), "big"), ranges[4]
        except OSError:
            out.append(ip)
            continue
        for network, mask in checks:
            if value & mask == network:
                break
        else:
            out.append(ip)
    return out
