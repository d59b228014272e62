"""Where customers connect to the rotating gateway: always the gateway's configuration
(PROXYPLANE_GATEWAY_HOST / HTTP_PORT / HTTPS_PORT / SOCKS_PORT), read when asked. Catalog products and
services sold before issue 22 carry a stored copy under the key "gateway" (the demo catalog stored
8080/1080); it is never shown: `without_stored_gateway` drops it from what customers read. Static services
are reached at `<exit IP>:<static port>` (`static_ports`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from proxyplane.core.gateway_settings import GatewaySettings, port_or_none

STORED_KEY = "gateway"


@dataclass(frozen=True)
class RotatingGateway:
    host: str
    http_port: int | None  # None: the port is not opened (configured as -1)
    https_port: int | None
    socks5_port: int | None


def rotating_gateway(settings: GatewaySettings | None = None) -> RotatingGateway:
    gw = settings or GatewaySettings()
    return RotatingGateway(
        host=gw.host,
        http_port=port_or_none(gw.http_port),
        https_port=port_or_none(gw.https_port),
        socks5_port=port_or_none(gw.socks_port),
    )


@dataclass(frozen=True)
class StaticPorts:
    """The ports of static services: customers connect to `<exit IP>:<port>` (the exit IP is the address
    dialed, served by one wildcard listener per port)."""

    http_port: int
    https_port: int | None  # None: not opened (configured as -1)
    socks5_port: int


def static_ports(settings: GatewaySettings | None = None) -> StaticPorts:
    """The one rule for static endpoints, read by every door (v1 proxy_ips, the legacy iplist)."""
    gw = settings or GatewaySettings()
    return StaticPorts(
        http_port=gw.static_http_port,
        https_port=port_or_none(gw.static_https_port),
        socks5_port=gw.static_socks_port,
    )


def without_stored_gateway(values: dict[str, Any] | None) -> dict[str, Any]:
    """A copy of a product's config or a service's parameters without the stale stored gateway."""
    return {k: v for k, v in (values or {}).items() if k != STORED_KEY}
