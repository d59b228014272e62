"""The platform's own listeners, which customers may never reach through the proxy (destinations.py rule 1).

Read from the same settings the processes listen by: the API (PROXYPLANE_API_HOST:API_PORT), the separate
legacy port, the API's metrics port, every gateway port (rotating on GATEWAY_HOST, static on each
STATIC_BIND address), the gateway's metrics port (worker i of `proxyplane gateway --workers N` on
METRICS_PORT + i: the supervisor adds the whole span), and the database's host:port from its URL (resolved
once at start: every address it has; a unix-socket or SQLite database has none). A gateway adds the ports
it actually bound on top (server.py: port 0 in tests). Ports set to -1 are not listened on and not listed.
"""

from __future__ import annotations

import logging
import os
import socket

from pydantic_settings import BaseSettings, SettingsConfigDict

from proxyplane.core.gateway_settings import GatewaySettings
from proxyplane.core.settings import Settings, get_settings

log = logging.getLogger(__name__)

Listener = tuple[str, int]
WILDCARD = "0.0.0.0"
POSTGRESQL_PORT = 5432  # the default port of the one server database the platform runs on


class _ApiMetrics(BaseSettings):
    """The API's metrics port: the same variables as observability/settings.py (not imported here: the
    gateway imports only core and storage)."""

    model_config = SettingsConfigDict(env_prefix="PROXYPLANE_", extra="ignore")

    metrics_host: str = "127.0.0.1"
    metrics_port: int = -1


def api_listeners(settings: Settings) -> list[Listener]:
    out = [(settings.api_host, settings.api_port)]
    # PROXYPLANE_LEGACY_PORT as adapters/legacy.legacy_port reads it (not imported: the gateway loads no app)
    legacy = os.environ.get("PROXYPLANE_LEGACY_PORT", "").strip()
    if legacy.isdigit() and int(legacy) > 0:
        out.append((settings.api_host, int(legacy)))
    metrics = _ApiMetrics()
    if metrics.metrics_port >= 0:
        out.append((metrics.metrics_host, metrics.metrics_port))
    return out


def gateway_listeners(gw: GatewaySettings, workers: int = 1) -> list[Listener]:
    out = [(gw.host, port) for port in (gw.http_port, gw.https_port, gw.socks_port) if port >= 0]
    for port in (gw.static_http_port, gw.static_https_port, gw.static_socks_port):
        if port >= 0:
            out += [(host, port) for host in gw.static_bind_addresses()]
    if gw.metrics_port > 0:
        out += [(gw.metrics_host, gw.metrics_port + i) for i in range(max(workers, 1))]
    return out


def database_listeners(url: str) -> list[Listener]:
    """Every address of the database's host with its port (none for SQLite or a unix socket)."""
    from sqlalchemy.engine import make_url

    try:
        parsed = make_url(url)
    except Exception:  # noqa: BLE001 - a URL the engine will refuse anyway
        return []
    host = parsed.host  # None for a SQLite file
    if not host or host.startswith("/"):
        return []
    port = parsed.port or POSTGRESQL_PORT
    out: list[Listener] = [(WILDCARD, port)]  # the port on every local address (it may listen on all)
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        log.warning("database host %s not resolved for the destination rules: %s", host, exc)
        return out
    return out + [(str(info[4][0]), port) for info in infos]


def platform_listeners(
    settings: Settings | None = None, gw: GatewaySettings | None = None, workers: int = 1
) -> list[Listener]:
    """Every listener of the platform as configured in this process's environment."""
    settings = settings or get_settings()
    gw = gw or GatewaySettings()
    return [
        *api_listeners(settings),
        *gateway_listeners(gw, workers),
        *database_listeners(settings.resolved_database_url()),
    ]
