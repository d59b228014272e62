"""Gateway settings (environment, PROXYPLANE_GATEWAY_*), read by the gateway nodes and by the API (the
endpoints and ports it shows customers).

Settings (environment, PROXYPLANE_GATEWAY_*): HOST (rotating gateway address, an IP literal; default
127.0.0.1, loopback, as on the embedded default; a provider sets its public address), HTTP_PORT 8080,
HTTPS_PORT 8443, SOCKS_PORT 1080 (rotating services; the demo catalog sells
these), STATIC_HTTP_PORT 3128, STATIC_HTTPS_PORT 3129, STATIC_SOCKS_PORT 1080 (on every exit IP of a
static service), TLS_CERT / TLS_KEY (default: a self-signed pair generated under PROXYPLANE_HOME),
USAGE_FLUSH_SECONDS 2, POLL_SECONDS 0.25, IN_SERVE true (`proxyplane serve` runs a node),
DEV_ALLOW_LOOPBACK (let customers reach destinations on 127.0.0.0/8 and ::1: development only; default
false, and no command turns it on: the demo's destination is PROXYPLANE_DEMO_ORIGIN, gateway/demo_origin.py;
the platform's own listeners stay refused even with it on, gateway/destinations.py),
DENY_DESTINATIONS "default" (comma-separated networks customers may not reach through the proxy; the
word "default" stands for the built-in private/link-local/metadata list of gateway/destinations.py, so
"default,198.51.100.7/32" adds to it and "10.0.0.0/8" replaces it),
LIMIT_REFRESH_SECONDS 1 (cross-node connection counts, see gateway/node_limits.py),
FULL_RELOAD_SECONDS 3600 (the store sync's full-reload backstop; the change log keeps nodes current),
STATIC_BIND "0.0.0.0,::" (the wildcard addresses the static ports listen on: one socket per port and
address, the exit IP being the address the client dialed; a family the host lacks is skipped),
FD_RESERVE 0 (descriptors kept back from the open-files limit; 0: max(64, limit / 20)), SERVICE_FD_SHARE
0.5 (the fraction of the node's descriptor budget one service may hold; see gateway/capacity.py),
METRICS_HOST 127.0.0.1 / METRICS_PORT -1 (the node's /metrics, /livez, /readyz, the node inside
`proxyplane serve` included, next to the API's own PROXYPLANE_METRICS_PORT; worker i of
`proxyplane gateway --workers N` on METRICS_PORT + i; -1: not served), DRAIN_SECONDS 30 (on SIGTERM a
node stops accepting and lets open connections finish for this long, then flushes usage and exits).
A port set to -1 is not opened.
"""

import ipaddress

from pydantic import field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


class GatewaySettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="PROXYPLANE_GATEWAY_", extra="ignore")

    host: str = "127.0.0.1"
    http_port: int = 8080
    https_port: int = 8443
    socks_port: int = 1080
    static_http_port: int = 3128
    static_https_port: int = 3129
    static_socks_port: int = 1080
    tls_cert: str = ""
    tls_key: str = ""
    usage_flush_seconds: float = 2.0  # spooled usage -> the store (gateway/usage_spool.py)
    usage_spool_seconds: float = 1.0  # metered usage -> the node's spool file: what a SIGKILL may lose
    usage_spool_max_mb: int = 512  # the spool's bound on disk (a store outage of hours at most)
    poll_seconds: float = 0.25
    in_serve: bool = True  # `proxyplane serve` runs a gateway node in the API process
    dev_allow_loopback: bool = False  # destinations on loopback allowed (development; see above)
    deny_destinations: str = "default"
    limit_refresh_seconds: float = 1.0
    client_ip_window_seconds: float = 600.0  # anti-sharing: an address counts this long (issue 32.5)
    full_reload_seconds: float = 3600.0  # gateway/store.py backstop (O(everything) per node: keep it rare)
    tunnel_engine: bool = True  # CONNECT/SOCKS5 tunnels through the C engine if built (decisions/gateway.md)
    static_bind: str = "0.0.0.0,::"  # wildcard addresses of the static listeners (comma-separated)
    fd_reserve: int = 0  # descriptors kept back from RLIMIT_NOFILE (0: automatic)
    service_fd_share: float = 0.5  # of the node's descriptor budget, per service
    # metrics and health (gateway/metrics_http.py): worker i of a host serves on METRICS_PORT + i; -1: off
    metrics_host: str = "127.0.0.1"
    metrics_port: int = -1
    drain_seconds: float = 30.0  # SIGTERM: listeners closed, open connections get this long to finish

    def static_bind_addresses(self) -> tuple[str, ...]:
        return tuple(part.strip() for part in self.static_bind.split(",") if part.strip())

    @field_validator("host")
    @classmethod
    def _address(cls, value: str) -> str:
        ipaddress.ip_address(value)  # an IP literal: the address the rotating gateway binds and shows
        return value


def port_or_none(value: int) -> int | None:
    return None if value < 0 else value
