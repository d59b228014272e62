"""`proxyplane doctor`: check this host's configuration and say what to fix (docs/deploy.md).

Checks, each a ``Finding`` (ok, a problem to fix, or a note):
- the database answers and is migrated to this release's head (the same check as /readyz);
- the secret key: set in the environment (PROXYPLANE_SECRET_KEY, the same on every host: it encrypts
  proxy passwords and signs sessions), and it decrypts the proxy passwords already stored;
- the exit IPs of the stock: how many are local to this host (served by a gateway node here), the others
  needing another gateway host (``--gateway``: none local is a problem);
- the destination rules: a relaxed one (loopback allowed, a private range out of the deny-list, the demo
  origin let through) is a problem to fix;
- the ports this host's processes will listen on are free (listen_check, as `serve` does before starting);
- the open-files limit against what the configuration needs: two descriptors per proxied connection, the
  node's reserve, and the largest per-service connection limit sold (one service may hold SERVICE_FD_SHARE
  of a node's budget)."""

from __future__ import annotations

import resource
from dataclasses import dataclass

from sqlalchemy import func, select

from proxyplane.core.gateway_settings import GatewaySettings
from proxyplane.core.security import SecretBox
from proxyplane.core.settings import Settings
from proxyplane.storage.engine import Database
from proxyplane.storage.models.services import Service
from proxyplane.storage.models.stock import StockIp

from . import health

MIN_GATEWAY_NOFILE = 65536  # a production gateway host: at least this many descriptors per process
PER_CONNECTION = 2  # client + upstream socket (gateway/capacity.py)


@dataclass(frozen=True)
class Finding:
    check: str
    ok: bool | None  # None: a note, neither fine nor a problem
    text: str

    def line(self) -> str:
        mark = {True: "ok  ", False: "FIX ", None: "note"}[self.ok]
        return f"{mark} {self.check:<12} {self.text}"


def _safe_url(url: str) -> str:
    if "@" in url:
        scheme, rest = url.split("://", 1)
        return f"{scheme}://***@{rest.split('@', 1)[1]}"
    return url


async def check_database(db: Database, url: str) -> list[Finding]:
    reason = await health.not_ready(db)
    if reason is None:
        return [Finding("database", True, f"{_safe_url(url)} reachable, schema at this release's head")]
    fix = " (run `proxyplane migrate`)" if "pending" in reason or "not migrated" in reason else ""
    return [Finding("database", False, f"{_safe_url(url)}: {reason}{fix}")]


async def check_secret(db: Database, settings: Settings, scaled_out: bool) -> list[Finding]:
    out = []
    if settings.secret_key:
        out.append(Finding("secret key", True, "PROXYPLANE_SECRET_KEY is set"))
    elif scaled_out:
        out.append(
            Finding(
                "secret key",
                False,
                "PROXYPLANE_SECRET_KEY is not set: with a shared PostgreSQL "
                "every host needs the same key (it encrypts proxy passwords, signs sessions)",
            )
        )
    else:
        out.append(
            Finding(
                "secret key",
                None,
                f"generated key in {settings.home / 'secret.key'} "
                "(fine on one machine; set PROXYPLANE_SECRET_KEY when adding hosts)",
            )
        )
    box = SecretBox(settings.resolved_secret_key())
    try:
        async with db.unit_of_work(write=False) as uow:
            # the newest service's password: written with the key in use now (an arbitrary row may be older)
            newest = select(Service.password_enc).order_by(Service.number.desc()).limit(1)
            token = (await uow.session.execute(newest)).scalar_one_or_none()
    except Exception:
        return out  # the database finding says why
    if token is not None:
        try:
            box.decrypt(token)
            out.append(Finding("secret key", True, "decrypts the stored proxy passwords"))
        except ValueError:
            out.append(
                Finding(
                    "secret key",
                    False,
                    "does NOT decrypt the stored proxy passwords: this host's "
                    "PROXYPLANE_SECRET_KEY differs from the one the others use",
                )
            )
    return out


async def check_exit_ips(db: Database, gateway: bool) -> list[Finding]:
    from proxyplane.core.address_prefixes import outside
    from proxyplane.gateway.local_ips import local_prefixes

    prefixes = local_prefixes()
    if prefixes is None:
        return [Finding("exit IPs", None, "cannot read this host's local addresses (no netlink)")]
    try:
        async with db.unit_of_work(write=False) as uow:
            ips = list(
                (
                    await uow.session.execute(select(StockIp.address).where(StockIp.retired_at.is_(None)))
                ).scalars()
            )
    except Exception:
        return []
    missing = outside(ips, prefixes)
    local = len(ips) - len(missing)
    shown = ", ".join(str(p) for p in prefixes[:6])
    if not ips:
        return [Finding("exit IPs", None, "no stock IPs yet")]
    if gateway and local == 0:
        return [
            Finding(
                "exit IPs",
                False,
                f"none of the {len(ips)} stock IPs is local to this host "
                f"(local prefixes: {shown}): add the exit prefix to this host or run the gateway "
                "where the addresses are",
            )
        ]
    note = f"{local} of {len(ips)} stock IPs local to this host ({shown})"
    if missing:
        note += f"; {len(missing)} served by other gateway hosts, e.g. {', '.join(missing[:3])}"
    return [Finding("exit IPs", True if local else None, note)]


def uncovered(spec: str) -> list[str]:
    """The built-in deny-list's networks a PROXYPLANE_GATEWAY_DENY_DESTINATIONS value leaves open."""
    import ipaddress

    from proxyplane.gateway.destinations import DEFAULT_DENY, deny_list

    nets = [ipaddress.ip_network(n) for n in deny_list(spec)]
    out = []
    for default in map(ipaddress.ip_network, DEFAULT_DENY):
        if not any(n.version == default.version and default.subnet_of(n) for n in nets):  # type: ignore[arg-type]
            out.append(str(default))
    return out


def check_destinations(settings: Settings, gw: GatewaySettings) -> list[Finding]:
    """Every relaxed destination rule is a problem on a provider host (gateway/destinations.py): customers'
    proxies would reach this host's loopback, its private networks or the demo origin."""
    from proxyplane.gateway import demo_origin
    from proxyplane.gateway.own_listeners import platform_listeners

    problems = []
    if gw.dev_allow_loopback:
        problems.append(
            "PROXYPLANE_GATEWAY_DEV_ALLOW_LOOPBACK is on: customers' proxies reach services on this "
            "host's loopback (development only: unset it)"
        )
    try:
        missing = uncovered(gw.deny_destinations)
    except ValueError as exc:
        missing, problems = [], [*problems, f"PROXYPLANE_GATEWAY_DENY_DESTINATIONS: {exc}"]
    if missing:
        problems.append(
            f"PROXYPLANE_GATEWAY_DENY_DESTINATIONS leaves {len(missing)} private/reserved range(s) open, "
            f'e.g. {", ".join(missing[:4])} (keep "default" in it)'
        )
    try:
        origin = demo_origin.configured()
    except ValueError as exc:
        origin, problems = None, [*problems, f"PROXYPLANE_DEMO_ORIGIN: {exc}"]
    if origin is not None:
        problems.append(
            f"PROXYPLANE_DEMO_ORIGIN lets {origin[0]}:{origin[1]} through the proxies "
            "(the demo's origin: unset it on a provider host)"
        )
    if problems:
        return [Finding("destinations", False, text) for text in problems]
    ports = len({port for _, port in platform_listeners(settings, gw)})
    text = f"loopback, private ranges and the platform's {ports} listen ports refused to customers"
    return [Finding("destinations", True, text)]


def check_ports(settings: Settings, gw: GatewaySettings) -> list[Finding]:
    from proxyplane.adapters.legacy import legacy_port
    from proxyplane.core import listen_check

    planned = listen_check.planned(settings, gw, legacy_port())
    problems = []
    for item in planned:
        try:
            listen_check.check([item])
        except listen_check.ListenError as exc:
            problems.append(Finding("ports", False, f"{exc} (is ProxyPlane already running here?)"))
    if problems:
        return problems
    return [Finding("ports", True, f"{len(planned)} listen address(es) free")]


async def check_descriptors(db: Database, gw: GatewaySettings, gateway: bool) -> list[Finding]:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    limit = soft if soft != resource.RLIM_INFINITY else 1 << 20
    reserve = gw.fd_reserve or max(64, limit // 20)
    connections = max(limit - reserve, 0) // PER_CONNECTION
    out = []
    try:
        async with db.unit_of_work(write=False) as uow:
            largest = (
                await uow.session.execute(
                    select(func.max(Service.max_connections)).where(Service.status == "active")
                )
            ).scalar_one_or_none() or 0
    except Exception:
        largest = 0
    share = int(connections * gw.service_fd_share)
    if largest and largest > share:
        need = int(largest / gw.service_fd_share) * PER_CONNECTION + reserve
        out.append(
            Finding(
                "descriptors",
                False,
                f"a service may open {largest} connections but one service "
                f"gets at most {share} here (open files {soft}): raise LimitNOFILE to >= {need}",
            )
        )
    if gateway and limit < MIN_GATEWAY_NOFILE:
        out.append(
            Finding(
                "descriptors",
                False,
                f"open-files limit {soft} (hard {hard}) allows "
                f"{connections} proxied connections per process: set LimitNOFILE={MIN_GATEWAY_NOFILE} "
                "or more in the unit (docs/deploy.md)",
            )
        )
    if not out:
        out.append(
            Finding(
                "descriptors",
                True,
                f"open files {soft}: {connections} proxied connections per "
                f"process, {share} per service (largest limit sold: {largest})",
            )
        )
    return out


async def run_checks(settings: Settings, gw: GatewaySettings, gateway: bool, ports: bool) -> list[Finding]:
    url = settings.resolved_database_url()
    db = Database(url)
    try:
        findings = await check_database(db, url)
        findings += await check_secret(db, settings, scaled_out=not url.startswith("sqlite"))
        findings += await check_exit_ips(db, gateway)
        findings += check_destinations(settings, gw)
        if ports:
            findings += check_ports(settings, gw)
        findings += await check_descriptors(db, gw, gateway)
    finally:
        await db.dispose()
    return findings
