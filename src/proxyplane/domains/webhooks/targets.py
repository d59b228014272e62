"""Where a webhook may be sent: no SSRF. A URL must be https and every address its host resolves to must be
public (globally routable, not multicast). With the development setting `webhooks_allow_http_loopback`,
loopback addresses (127.0.0.0/8, ::1) and plain http to them are allowed too. The check runs at creation
and again before every attempt; the request then goes to the checked address (no second DNS lookup)."""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class TargetRefused(ValueError):
    """The URL or the addresses it resolves to are not allowed."""


@dataclass(frozen=True)
class Target:
    scheme: str
    host: str
    port: int
    addresses: tuple[str, ...]

    def pinned_url(self, url: str) -> str:
        """The URL with the host replaced by the first checked address (keeps path and query)."""
        parts = urlsplit(url)
        ip = self.addresses[0]
        netloc = f"[{ip}]:{self.port}" if ":" in ip else f"{ip}:{self.port}"
        return parts._replace(netloc=netloc).geturl()

    @property
    def host_header(self) -> str:
        default = 443 if self.scheme == "https" else 80
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if self.port == default else f"{host}:{self.port}"


def _unwrap(ip: IPAddress) -> IPAddress:
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return ip.ipv4_mapped
        if ip.sixtofour is not None:
            return ip.sixtofour
        if ip.teredo is not None:
            return ip.teredo[1]
    return ip


def address_allowed(ip: IPAddress, allow_loopback: bool) -> bool:
    ip = _unwrap(ip)
    if allow_loopback and ip.is_loopback:
        return True
    return ip.is_global and not ip.is_multicast and not ip.is_reserved and not ip.is_unspecified


def parse(url: str, allow_loopback: bool) -> tuple[str, str, int]:
    """Syntax checks; returns (scheme, host, port)."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError as exc:
        raise TargetRefused(f"invalid URL: {exc}") from None
    scheme = parts.scheme.lower()
    if scheme not in ("https", "http"):
        raise TargetRefused("the URL must start with https://")
    if scheme == "http" and not allow_loopback:
        raise TargetRefused("the URL must use https:// (plain http is only allowed in development)")
    if parts.username is not None or parts.password is not None:
        raise TargetRefused("credentials in the URL are not allowed")
    host = (parts.hostname or "").rstrip(".")
    if not host:
        raise TargetRefused("the URL has no host")
    if parts.fragment:
        raise TargetRefused("the URL must not have a #fragment")
    return scheme, host, port or (443 if scheme == "https" else 80)


async def resolve(url: str, allow_loopback: bool) -> Target:
    """Check the URL and every address of its host; raise TargetRefused with the reason."""
    scheme, host, port = parse(url, allow_loopback)
    try:
        addresses: list[IPAddress] = [ipaddress.ip_address(host)]
    except ValueError:
        try:
            infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError) as exc:
            raise TargetRefused(f"the host {host!r} cannot be resolved ({exc})") from None
        addresses = []
        for info in infos:
            ip = ipaddress.ip_address(str(info[4][0]).split("%", 1)[0])
            if ip not in addresses:
                addresses.append(ip)
    if not addresses:
        raise TargetRefused(f"the host {host!r} has no address")
    for ip in addresses:
        if not address_allowed(ip, allow_loopback):
            raise TargetRefused(
                f"the host {host!r} resolves to {ip}, a private, loopback, link-local, multicast or "
                "reserved address; webhooks go to public addresses only"
            )
    if scheme == "http" and not all(_unwrap(ip).is_loopback for ip in addresses):
        raise TargetRefused("plain http:// is only allowed to loopback addresses (development)")
    return Target(scheme, host, port, tuple(str(_unwrap(ip)) for ip in addresses))
