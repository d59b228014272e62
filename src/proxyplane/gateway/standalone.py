"""Run a gateway with one service from the command line (benchmarks, manual tests).

    python -m proxyplane.gateway.standalone --listen 127.0.0.7 --http-port 9080 --socks-port 1081 \\
        --login benchuser --password benchpass --exit-ip 127.0.0.9

The service is a rotating one served on the gateway address; ``--exit-ip`` may repeat (``IP`` or
``IP=country``). ``--https-port`` with ``--tls-cert``/``--tls-key`` adds HTTPS-to-proxy. Loopback only.
``--workers N`` runs N worker processes on the same ports under a supervisor (workers.py), with the
connection limit and sticky sessions shared between them, as ``proxyplane gateway --workers N`` does.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ipaddress
import os
import signal
import ssl
import sys
import time
from pathlib import Path

from .access import AccessTable, ServiceEntry
from .context import Settings
from .limits import ConnectionLimiter, WorkerLimiter
from .metering import UsageRow
from .quotas import QuotaEntry
from .routing import Router
from .server import Gateway, GatewayConfig, install_uvloop
from .subnets import SubnetExits
from .subusers import SubuserEntry
from .workers import HostShared, Supervisor


def _loopback(value: str) -> str:
    if not ipaddress.ip_address(value).is_loopback:
        raise argparse.ArgumentTypeError(f"{value} is not a loopback address")
    return value


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m proxyplane.gateway.standalone", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--listen", type=_loopback, default="127.0.0.1")
    p.add_argument("--http-port", type=int)
    p.add_argument("--https-port", type=int)
    p.add_argument("--socks-port", type=int)
    p.add_argument("--login", "--user", dest="login", default="user")
    p.add_argument("--password", default="pass")
    p.add_argument("--exit-ip", action="append", default=[], help="IP or IP=country; repeatable")
    p.add_argument("--exit-subnet", action="append", default=[],
                   help="IPv6 CIDR[=country] in 2001:db8::/32: exits drawn from it (issue 16)")
    p.add_argument("--whitelist", action="append", default=[], type=_loopback, help="client IP; repeatable")
    p.add_argument("--mode", choices=["rotating", "sticky", "pinned"], default="rotating")
    p.add_argument("--max-connections", type=int, default=0)
    p.add_argument("--udp", action="store_true")
    p.add_argument("--tls-cert")
    p.add_argument("--tls-key")
    p.add_argument("--usage-log", action="store_true", help="print usage rows to stderr when flushed")
    p.add_argument("--no-uvloop", action="store_true")
    p.add_argument("--workers", type=int, default=0,
                   help="worker processes on the same ports under a supervisor (default 0: one process)")
    p.add_argument("--status-file", type=Path, help="with --workers: the supervisor's JSON status file")
    p.add_argument("--quota-mb", type=int, default=0, help="a traffic quota of this many MB (0: none)")
    p.add_argument("--subuser", action="store_true",
                   help="--login/--password are a sub-user's of the service (its own login: LOGIN-owner)")
    p.add_argument("--no-tunnel-cache", action="store_true", help="the engine asks Python for every decision")
    p.add_argument("--splice-after", type=int, default=Settings.splice_after,
                   help="bytes a tunnel relays before the engine splices it (0: never)")
    p.add_argument("--defer-accept", type=int, default=Settings.defer_accept,
                   help="TCP_DEFER_ACCEPT seconds on the engine's listeners (0: off)")
    p.add_argument("--drain-seconds", type=float, default=0.0,
                   help="on SIGTERM: stop accepting, let open connections finish this long (default 0)")
    args = p.parse_args(argv)
    if not args.exit_ip and not args.exit_subnet:
        args.exit_ip = [args.listen]
    if args.https_port is not None and not (args.tls_cert and args.tls_key):
        p.error("--https-port needs --tls-cert and --tls-key")
    return args


def _documentation(value: str) -> str:
    """An IPv6 subnet of the documentation prefix 2001:db8::/32 (a bench/dev tool: routed to lo in a
    network namespace, never a real network)."""
    net = ipaddress.IPv6Network(value, strict=False)
    if not net.subnet_of(ipaddress.IPv6Network("2001:db8::/32")):
        raise ValueError(f"{value}: only subnets of 2001:db8::/32 here")
    return str(net)


def build_entry(args: argparse.Namespace) -> ServiceEntry:
    exits: dict[str, str] = {}
    for spec in args.exit_ip:
        ip, _, country = spec.partition("=")
        exits[_loopback(ip)] = country.lower()
    pin = next(iter(exits)) if args.mode == "pinned" and exits else None
    if args.exit_subnet:  # an IPv6 service: its exits are the subnets' addresses (gateway/subnets.py)
        specs = (spec.partition("=") for spec in args.exit_subnet)
        pairs = [(_documentation(cidr), country.lower()) for cidr, _, country in specs]
        exits = SubnetExits(pairs)
        pin = str(ipaddress.IPv6Network(pairs[0][0])[1]) if args.mode == "pinned" else None
    login: str = args.login
    subs: tuple[SubuserEntry, ...] = ()
    if args.subuser:  # the credentials are a sub-user's (gateway/subusers.py): metered as "standalone/1"
        login, subs = f"{args.login}-owner", (SubuserEntry(1, "standalone-sub", args.login, args.password),)
    return ServiceEntry("standalone", "rotating", login, args.password, exit_ips=exits,
                        whitelist=frozenset(args.whitelist), session_mode=args.mode, pin=pin,
                        max_connections=args.max_connections, udp_allowed=args.udp, subusers=subs,
                        quota=QuotaEntry("standalone", args.quota_mb << 20, None) if args.quota_mb else None)


async def _print_usage(rows: list[UsageRow]) -> None:
    for row in rows:
        print(f"usage {row.minute:%H:%M} {row.service_id} {row.host} req={row.requests} "
              f"conn={row.connections} "
              f"up={row.bytes_up} down={row.bytes_down} errors={row.errors}", file=sys.stderr)


def settings(args: argparse.Namespace) -> Settings:
    # a loopback-only bench/dev tool: its destinations are on loopback too
    return Settings(allow_loopback=True, tunnel_cache=not args.no_tunnel_cache,
                    defer_accept=args.defer_accept, splice_after=args.splice_after)


async def serve(args: argparse.Namespace, shared: HostShared | None = None, worker: int = 0) -> None:
    tls = None
    if args.https_port is not None:
        tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        tls.load_cert_chain(args.tls_cert, args.tls_key)
    config = GatewayConfig(gateway_host=args.listen, gateway_http_port=args.http_port,
                           gateway_https_port=args.https_port, gateway_socks_port=args.socks_port,
                           ssl_context=tls)
    router: Router | None = None
    limiter: ConnectionLimiter | None = None
    if shared is not None:
        router, limiter = shared.router(), shared.limiter(worker)
    gateway = Gateway(AccessTable([build_entry(args)]), config, settings=settings(args),
                      router=router, limiter=limiter, sink=_print_usage if args.usage_log else None)
    await gateway.start()
    if shared is not None:
        shared.stats.set_serving(worker, time.time())
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    who = f" (worker {worker}/{shared.workers} pid {os.getpid()})" if shared is not None else ""
    print(f"gateway listening on {args.listen} http={args.http_port} https={args.https_port} "
          f"socks={args.socks_port}{who}", file=sys.stderr, flush=True)
    while not stop.is_set():
        if isinstance(limiter, WorkerLimiter):
            limiter.report()  # this worker's admitted/open connections in the status
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), 1.0)
    await gateway.drain(args.drain_seconds)
    await gateway.close()


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if not args.no_uvloop:
        install_uvloop()
    if args.workers <= 0:
        asyncio.run(serve(args))
        return
    shared = HostShared(args.workers)

    def worker(index: int) -> None:
        asyncio.run(serve(args, shared, index))

    raise SystemExit(Supervisor(shared, worker, status_path=args.status_file, name="standalone").run())


if __name__ == "__main__":
    main()
