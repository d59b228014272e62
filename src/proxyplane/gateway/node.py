"""A gateway node against the shared store: access table kept current, usage written, sticky sessions
shared. Used by ``proxyplane serve`` (inside the API process) and ``proxyplane gateway`` (on its own).

Settings: proxyplane.core.gateway_settings.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime
import logging
import ssl
import tempfile
import time
from pathlib import Path
from typing import Any

from proxyplane.core.gateway_settings import GatewaySettings, port_or_none
from proxyplane.core.security import SecretBox
from proxyplane.storage.engine import Database

from . import metrics
from .access import AccessTable
from .client_ips import ClientIps
from .context import Settings as DataPlaneSettings
from .destinations import deny_list
from .local_ips import LocalAddresses
from .metrics_http import MetricsServer
from .node_limits import NodeCounts
from .server import Gateway, GatewayConfig
from .sticky_sync import SharedRouter, StickySync
from .store import StoreSync
from .upstream_sync import UpstreamSync
from .usage_sink import write_batches
from .usage_spool import UsageSpool

log = logging.getLogger(__name__)


def self_signed(home: Path) -> tuple[str, str]:
    """A self-signed certificate for HTTPS-to-proxy (created once under ``home``)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    folder = home / "gateway-tls"
    cert_path, key_path = folder / "cert.pem", folder / "key.pem"
    if cert_path.exists() and key_path.exists():
        return str(cert_path), str(key_path)
    folder.mkdir(parents=True, exist_ok=True)
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "proxyplane-gateway")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=3650))
        .sign(key, hashes.SHA256())
    )
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    key_path.chmod(0o600)
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return str(cert_path), str(key_path)


class GatewayNode:
    def __init__(
        self,
        db: Database,
        box: SecretBox,
        settings: GatewaySettings,
        *,
        home: Path | None = None,
        node_id: str | None = None,
        data_plane: DataPlaneSettings | None = None,
        worker: int = 0,
    ) -> None:
        self.db, self.settings = db, settings
        data_plane = dataclasses.replace(
            data_plane or DataPlaneSettings(),
            allow_loopback=settings.dev_allow_loopback,
            deny_destinations=deny_list(settings.deny_destinations),
            tunnel_engine=settings.tunnel_engine,
            fd_reserve=settings.fd_reserve,
            service_fd_share=settings.service_fd_share,
        )
        self.table = AccessTable()
        self.store = StoreSync(db, box, self.table, poll_interval=settings.poll_seconds)
        self.router = SharedRouter()
        self.sticky = StickySync(db, self.router, node_id, interval=settings.poll_seconds)
        tls = None
        if (
            port_or_none(settings.https_port) is not None
            or port_or_none(settings.static_https_port) is not None
        ):
            cert, key = settings.tls_cert, settings.tls_key
            if not (cert and key):
                cert, key = self_signed(home or Path(".proxyplane"))
            tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            tls.load_cert_chain(cert, key)
        config = GatewayConfig(
            gateway_host=settings.host,
            gateway_http_port=port_or_none(settings.http_port),
            gateway_https_port=port_or_none(settings.https_port),
            gateway_socks_port=port_or_none(settings.socks_port),
            static_http_port=port_or_none(settings.static_http_port),
            static_https_port=port_or_none(settings.static_https_port),
            static_socks_port=port_or_none(settings.static_socks_port),
            static_bind=settings.static_bind_addresses(),
            ssl_context=tls,
            flush_interval=settings.usage_spool_seconds,  # the meter's flushes go to the spool
        )
        if home is None:  # no home (a library caller): a spool of this process only
            spool_root = Path(tempfile.mkdtemp(prefix="proxyplane-usage-spool-"))
        else:
            spool_root = home / "usage-spool"
        self.spool = UsageSpool(
            spool_root,
            worker,
            lambda batches: write_batches(db, batches),
            max_bytes=settings.usage_spool_max_mb * 1024 * 1024,
        )
        self.gateway = Gateway(self.table, config, settings=data_plane, router=self.router, sink=self.spool)
        self.spool.on_applied = self.gateway.ctx.meter.mark_flushed
        # upstream pools (issue 36.4): suppliers read, their byte counts written, every poll interval
        every = max(settings.poll_seconds, 1.0)
        self.upstreams = UpstreamSync(db, box, self.gateway.ctx.upstreams, interval=every)
        self._spool_job: asyncio.Future[None] | None = None
        self.table.client_ips = ClientIps(settings.client_ip_window_seconds)
        self.counts = NodeCounts(
            db,
            self.gateway.limiter,
            self.sticky.node_id,
            interval=settings.limit_refresh_seconds,
            client_ips=self.table.client_ips,
        )
        self.addresses = LocalAddresses(db, self.sticky.node_id, self.table, router=self.router)
        self.addresses.on_prefixes = self.gateway.ctx.destinations.set_host  # this host: never a destination
        self.started = False
        self.polled = 0.0  # when the change log was last read (time.time())
        # the change log unread this long: the quota data (and the access table) are stale (issue 32)
        self.stale_after = max(5.0, 20 * settings.poll_seconds)
        self.store.poll = metrics.timed(self.store.poll, self._polled)  # type: ignore[method-assign]
        self.store.on_applied = metrics.CHANGE_LAG.observe
        self.metrics: MetricsServer | None = None

    def _polled(self, now: float) -> None:
        self.polled = now

    def gauges(self) -> dict[str, float]:
        """The node's part of the gateway metrics (metrics.NodeCollector)."""
        age = time.time() - self.polled if self.polled else 0.0
        metered = self.table.metered
        return {
            "access_table_services": len(self.table),
            "store_poll_age_seconds": age,
            "usage_spool_bytes": self.spool.bytes,
            "usage_spool_files": self.spool.files,
            "store_unreachable": 1.0 if self.spool.store_error is not None else 0.0,
            "quota_services": metered,
            "quota_data_age_seconds": age if metered else 0.0,
            "quota_data_stale": 1.0 if metered and self.quota_stale() is not None else 0.0,
        }

    def quota_stale(self) -> str | None:
        """Why the node's quota data (issue 32) may be behind the other nodes', or None. It keeps enforcing
        what it loaded plus what it counts itself (never free traffic), but it cannot learn the others'
        use (the change log is not read) or they cannot learn its own (its usage is spooled, not stored)."""
        age = time.time() - self.polled if self.polled else 0.0
        if age > self.stale_after:
            return f"quota data stale: the change log was last read {age:.0f} s ago"
        if self.spool.store_error is not None:
            return "quota data stale: this node's usage is not in the store"
        return None

    def degraded(self) -> str | None:
        """Serving, but not as it should: the store cannot take usage (it is spooled meanwhile), or, with
        metered services, the change log cannot be read (quotas are what the node last loaded)."""
        if self.spool.store_error is not None:
            return f"store unreachable, usage spooled ({self.spool.files} batches): {self.spool.store_error}"
        return self.quota_stale() if self.table.metered else None

    def not_ready(self) -> str | None:
        """Readiness: None once the access table is loaded and the listeners are open, until a drain."""
        if not self.started:
            return "access table not loaded yet"
        if self.gateway.draining:
            return "draining"
        return None

    async def serve_metrics(self, worker: int = 0) -> None:
        """/metrics, /livez, /readyz on METRICS_HOST:METRICS_PORT + worker (when the port is set)."""
        port = port_or_none(self.settings.metrics_port)
        if port is None:
            return
        self.metrics = MetricsServer(
            self.settings.metrics_host, port + worker if port else 0, self.not_ready, self.degraded
        )
        try:
            await self.metrics.start()
        except OSError as exc:  # metrics must never keep the node from serving
            log.warning("metrics port %s:%s not opened: %s", self.settings.metrics_host, port + worker, exc)
            self.metrics = None

    async def start(self) -> None:
        metrics.COLLECTOR.sources.add(self)
        await self.store.start()
        self.polled = time.time()
        await self.sticky.start()
        await self.counts.start()
        await self.upstreams.start()
        await self.gateway.start()
        self._spool_job = asyncio.ensure_future(self.spool.run(self.settings.usage_flush_seconds))
        try:
            await self.addresses.start()
        except Exception:  # the exit-IP report must never keep the node from serving
            log.exception("local address report not started")
        self.started = True

    def notify(self, service_id: object = None) -> None:
        """In-process fast path for the API's change signals."""
        self.store.notify(service_id)
        self.sticky.notify()

    async def flush_usage(self) -> int:
        """Everything metered so far into the store now (through the spool): the rows the meter still
        held plus the spooled batches sent (the meter hands its rows to the spool every second)."""
        rows = await self.gateway.meter.flush(self.spool)
        return rows + await self.spool.drain()

    def listeners(self) -> list[str]:
        lines = []
        host = self.settings.host
        for kind in ("http", "https", "socks"):
            if kind in self.gateway._gateway_servers:
                lines.append(f"rotating {kind:5} {host}:{self.gateway.gateway_port(kind)}")
        count = len(self.gateway.ctx.access.listen_ips())
        for host, kinds in self.gateway.static_listeners().items():
            for kind in kinds:
                port = self.gateway.static_port("::" if ":" in host else "0.0.0.0", kind)
                lines.append(f"static   {kind:5} {host}:{port} for {count} exit IP(s)")
        missing = self.addresses.nonlocal_count
        if missing:
            sample = ", ".join(self.addresses.nonlocal_sample[:3])
            lines.append(f"static   {missing} exit IP(s) not local to this host, not served ({sample} ..)")
        return lines

    def status(self) -> dict[str, Any]:
        """The node's state: listeners, exit IPs (and those it cannot serve), the descriptor budget."""
        gateway = self.gateway
        static = gateway.static_listeners()
        return {
            "node_id": self.sticky.node_id,
            "listening_sockets": len(gateway._gateway_servers) + sum(len(k) for k in static.values()),
            "static_listeners": static,
            "static_exit_ips": len(gateway.ctx.access.listen_ips()),
            **self.addresses.status(),
            "capacity": gateway.ctx.capacity.status(),
        }

    async def drain(self, seconds: float | None = None) -> int:
        """SIGTERM: stop accepting (readiness turns false), let the open connections finish for up to
        ``seconds`` (default: DRAIN_SECONDS); ``close()`` then flushes usage. Returns those still open."""
        wait = self.settings.drain_seconds if seconds is None else seconds
        return await self.gateway.drain(wait)

    async def close(self) -> None:
        metrics.COLLECTOR.sources.discard(self)
        await self.gateway.close()  # the meter's last rows into the spool
        if self._spool_job is not None:
            self._spool_job.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._spool_job
        await self.spool.close(self.settings.drain_seconds or 5.0)  # the rest stays for the next start
        if self.metrics is not None:
            await self.metrics.close()
        await self.addresses.close()
        await self.upstreams.close()
        await self.counts.close()
        await self.sticky.close()
        await self.store.close()
