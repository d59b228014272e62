"""The network-namespace half of tests/gateway/test_ipv6_exits.py (run as ``unshare -n -m python -m
tests.gateway.ipv6_netns CONFIG_JSON``; root only). Not collected by pytest (no ``test_`` prefix).

Inside the new namespaces: lo up, ``2001:db8::/48`` routed local to lo (no address configured, and
``net.ipv6.ip_nonlocal_bind`` left at 0: the gateway binds its exits with IP_FREEBIND), a private
/etc/hosts (bind-mounted in the new mount namespace only) with ``v6.test`` (AAAA ::1) and ``v4only.test``
(127.0.0.1 only), an origin on [::] that answers with the peer address it saw, and a gateway node on the
store the test wrote (SQLite file, or PostgreSQL through its Unix socket: 127.0.0.1 of the host is not
reachable from here). Each pass (C tunnel engine, then the pure-Python tunnel path) prints one JSON line.
"""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from proxyplane.core.gateway_settings import GatewaySettings
from proxyplane.core.security import SecretBox
from proxyplane.gateway import server as server_module
from proxyplane.gateway.local_ips import local_prefixes
from proxyplane.gateway.node import GatewayNode
from proxyplane.storage.engine import Database
from tests.gateway.clients import basic, connect_tunnel, http_get, read_response, socks_connect
from tests.gateway.conftest import Origin, _serve_origin

HOSTS = "127.0.0.1 localhost v4only.test\n::1 v6.test\n"


def setup_namespace(hosts: Path) -> None:
    for cmd in (
        ["ip", "link", "set", "lo", "up"],
        ["ip", "-6", "route", "add", "local", "2001:db8::/48", "dev", "lo"],
        ["mount", "--bind", str(hosts), "/etc/hosts"],
    ):
        subprocess.run(cmd, check=True)


async def one_pass(cfg: dict[str, Any], engine: bool) -> dict[str, Any]:
    server_module_available = server_module.available
    if not engine:
        server_module.available = lambda: False  # type: ignore[assignment]
    origin = Origin(0)
    srv = await asyncio.start_server(lambda r, w: _serve_origin(origin, r, w), "::", 0)
    port = srv.sockets[0].getsockname()[1]
    db = Database(cfg["database_url"])
    settings = GatewaySettings(
        http_port=0,
        https_port=-1,
        socks_port=0,
        static_http_port=-1,
        static_https_port=-1,
        static_socks_port=-1,
        usage_flush_seconds=60,
        dev_allow_loopback=True,
    )
    node = GatewayNode(db, SecretBox(cfg["secret_key"]), settings, home=Path(cfg["home"]))
    started = time.perf_counter()
    await node.start()
    out: dict[str, Any] = {
        "engine": engine and server_module_available(),
        "start_s": time.perf_counter() - started,
    }
    try:
        http = ("127.0.0.1", node.gateway.gateway_port("http"))
        socks = ("127.0.0.1", node.gateway.gateway_port("socks"))
        a, b = cfg["a"], cfg["b"]

        async def via_http(login: str, password: str, host: str = "v6.test") -> tuple[int, str]:
            status, _, body = await http_get(http, f"http://{host}:{port}/", basic(login, password))
            return status, body.decode()

        async def via_connect(login: str, password: str) -> str:
            status, reader, writer = await connect_tunnel(http, f"v6.test:{port}", basic(login, password))
            assert status == 200, status
            writer.write(b"GET /t HTTP/1.1\r\nHost: v6.test\r\n\r\n")
            body = (await read_response(reader))[2].decode()
            writer.close()
            return body.split()[0]

        async def via_socks(login: str, password: str, host: str = "v6.test") -> str | int:
            rep, _, reader, writer = await socks_connect(socks, host, port, login, password)
            if rep != 0:
                writer.close()
                return int(rep)
            writer.write(b"GET /s HTTP/1.1\r\nHost: v6.test\r\n\r\n")
            body = (await read_response(reader))[2].decode()
            writer.close()
            return body.split()[0]

        rotating = [await via_http(a["login"], a["password"]) for _ in range(cfg["requests"])]
        out["http_status"] = sorted({s for s, _ in rotating})
        out["http"] = [body.split()[0] for _, body in rotating]
        out["idle_upstreams"] = len(node.gateway.ctx.pool)  # a one-off address's upstream is not pooled
        out["connect"] = [await via_connect(a["login"], a["password"]) for _ in range(20)]
        out["socks"] = [await via_socks(a["login"], a["password"]) for _ in range(20)]
        sticky = f"{a['login']}-session-abc-ttl-5m"
        out["sticky"] = [(await via_http(sticky, a["password"]))[1].split()[0] for _ in range(3)]
        out["sticky"] += [await via_connect(sticky, a["password"]), await via_socks(sticky, a["password"])]
        out["pinned"] = [(await via_http(b["login"], b["password"]))[1].split()[0] for _ in range(3)]
        out["pinned"] += [
            await via_connect(b["login"], b["password"]),
            await via_socks(b["login"], b["password"]),
        ]
        out["no_aaaa_http"] = await via_http(a["login"], a["password"], "v4only.test")
        out["no_aaaa_socks"] = await via_socks(a["login"], a["password"], "v4only.test")
        out["ipv4_literal_http"] = await via_http(a["login"], a["password"], "127.0.0.1")
        meter = node.gateway.ctx.meter
        meter.harvest()
        out["errors"] = sorted({(row.service_id, cat) for row in meter.drain() for cat in row.errors})
        # refused upstreams (nothing listens on ``dead``) from rotating addresses: metered per subnet, and
        # flushed to the store by node.close() (the test reads them through the usage errors operation)
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
            dead = s.getsockname()[1]
        refused_http = await http_get(http, f"http://v6.test:{dead}/", basic(a["login"], a["password"]))
        status, _, writer = await connect_tunnel(http, f"v6.test:{dead}", basic(a["login"], a["password"]))
        writer.close()
        rep, _, _, writer = await socks_connect(socks, "v6.test", dead, a["login"], a["password"])
        writer.close()
        out["refused"] = [refused_http[0], status, rep]
        pending = meter.drain()
        out["exit_errors"] = sorted({ip for row in pending for ip, _ in row.exit_errors})
        meter.restore(pending)
        out["requests_s"] = time.perf_counter() - started - out["start_s"]
        out["local_prefixes"] = [str(n) for n in local_prefixes() or ()]
        out["origin_peers"] = sorted({p for p, _, _ in origin.seen})
    finally:
        await node.close()
        await db.dispose()
        srv.close()
        server_module.available = server_module_available  # type: ignore[assignment]
    return out


async def main(cfg: dict[str, Any]) -> None:
    for engine in (True, False):
        print(json.dumps(await one_pass(cfg, engine)), flush=True)


if __name__ == "__main__":
    config = json.loads(sys.argv[1])
    with tempfile.NamedTemporaryFile("w", suffix=".hosts", delete=False) as f:
        f.write(HOSTS)
    setup_namespace(Path(f.name))
    if config.get("uvloop"):
        import uvloop

        uvloop.run(main(config))
    else:
        asyncio.run(main(config))
