"""Before `proxyplane serve` starts anything: is every address it will listen on free? A taken port is
reported as one line naming the address and the setting that moves it (issue 22.7), instead of the
traceback a failed bind inside the app's start-up gives. Each address is test-bound with the socket options
of the real listener (the API: SO_REUSEADDR as uvicorn; the gateway: SO_REUSEADDR + SO_REUSEPORT, IPv6
wildcards V6ONLY, as gateway/server.py and gateway/tunnels.py), then closed at once. A port taken in the
instant between this check and the real bind still fails the old way."""

from __future__ import annotations

import errno
import socket
from dataclasses import dataclass

from proxyplane.core.gateway_settings import GatewaySettings
from proxyplane.core.settings import Settings

# an address family or address this host lacks: the listener is skipped there too (gateway: static_bind)
SKIPPED = {errno.EADDRNOTAVAIL, errno.EAFNOSUPPORT}


@dataclass(frozen=True)
class Listen:
    host: str
    port: int
    setting: str  # the environment variable (or option) that moves this port
    reuse_port: bool


class ListenError(Exception):
    """One line for the operator: which address, which setting."""


def planned(settings: Settings, gw: GatewaySettings, legacy_port: int | None) -> list[Listen]:
    """What `serve` listens on, in the order it is reported: API, separate legacy port, gateway."""
    out = [Listen(settings.api_host, settings.api_port, "PROXYPLANE_API_PORT", False)]
    if legacy_port is not None:
        out.append(Listen(settings.api_host, legacy_port, "PROXYPLANE_LEGACY_PORT", False))
    if not gw.in_serve:
        return out
    rotating = (("HTTP_PORT", gw.http_port), ("HTTPS_PORT", gw.https_port), ("SOCKS_PORT", gw.socks_port))
    for name, port in rotating:
        if port >= 0:
            out.append(Listen(gw.host, port, f"PROXYPLANE_GATEWAY_{name}", True))
    static = (
        ("STATIC_HTTP_PORT", gw.static_http_port),
        ("STATIC_HTTPS_PORT", gw.static_https_port),
        ("STATIC_SOCKS_PORT", gw.static_socks_port),
    )
    for name, port in static:
        if port >= 0:
            out.extend(
                Listen(host, port, f"PROXYPLANE_GATEWAY_{name}", True) for host in gw.static_bind_addresses()
            )
    return out


def check(listeners: list[Listen]) -> None:
    """Raise ListenError for the first address that cannot be listened on (taken or not permitted)."""
    for item in listeners:
        problem = _try_bind(item)
        if problem is None:
            continue
        where = f"[{item.host}]:{item.port}" if ":" in item.host else f"{item.host}:{item.port}"
        if problem == errno.EADDRINUSE:
            option = " (or `serve --port`)" if item.setting == "PROXYPLANE_API_PORT" else ""
            raise ListenError(
                f"{where} is already in use ({item.setting}): stop the program holding it "
                f"or set {item.setting}{option} to a free port"
            )
        raise ListenError(
            f"cannot listen on {where} ({item.setting}): {errno.errorcode.get(problem, problem)}"
        )


def _try_bind(item: Listen) -> int | None:
    v6 = ":" in item.host
    try:
        sock = socket.socket(socket.AF_INET6 if v6 else socket.AF_INET, socket.SOCK_STREAM)
    except OSError as exc:
        return None if exc.errno in SKIPPED else exc.errno
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if item.reuse_port and hasattr(socket, "SO_REUSEPORT"):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        if v6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        sock.bind((item.host, item.port))
        sock.listen(1)
    except OSError as exc:
        return None if exc.errno in SKIPPED else exc.errno
    finally:
        sock.close()
    return None
