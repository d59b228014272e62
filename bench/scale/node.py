"""One gateway node in its own process, for bench/scale/run.py: a real GatewayNode (store sync, sticky
sync, node counts, listeners on free ports) against the bench database.

    .venv/bin/python -m bench.scale.node --url postgresql://... [--watch SERVICE_ID] [--no-listeners]

Prints JSON lines on stdout: first {"ready": seconds, "cpu": seconds, "rss_kib": .., "hwm_kib": ..,
"services": ..} once the node has loaded everything and listens; then, with --watch,
{"t": unix time, "whitelist": [...]} each time the watched service's whitelist changes in the node's
table. Runs until stdin closes.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

from proxyplane.core.gateway_settings import GatewaySettings
from proxyplane.core.security import SecretBox
from proxyplane.gateway.node import GatewayNode
from proxyplane.storage.engine import Database

from .generate import SECRET, resolved


def status_kib(pid: int | str = "self") -> dict[str, int]:
    """VmRSS / VmHWM of a process, from /proc (KiB)."""
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(("VmRSS:", "VmHWM:")):
            out[line.split(":")[0]] = int(line.split()[1])
    return out


def emit(payload: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(payload) + "\n")
    sys.stdout.flush()


async def main(args: argparse.Namespace) -> None:
    db = Database(resolved(args.url))
    ports = -1 if args.no_listeners else 0
    settings = GatewaySettings(
        http_port=ports,
        https_port=-1,
        socks_port=ports,
        static_http_port=-1 if args.no_listeners else args.static_port,
        static_https_port=-1,
        static_socks_port=-1 if args.no_listeners else args.static_port and args.static_port + 1,
        static_bind="127.0.0.1" if args.no_listeners else "0.0.0.0",
        dev_allow_loopback=True,
        usage_flush_seconds=60,
    )
    home = Path(tempfile.mkdtemp(prefix="pp-scale-node-"))
    started, cpu0 = time.perf_counter(), time.process_time()
    node = GatewayNode(db, SecretBox(SECRET), settings, home=home)
    await node.start()
    ready = time.perf_counter() - started
    kib = status_kib()
    emit(
        {
            "cpu": round(time.process_time() - cpu0, 3),  # this process's CPU seconds to get ready
            "ready": round(ready, 3),
            "rss_kib": kib["VmRSS"],
            "hwm_kib": kib["VmHWM"],
            "services": len(node.table),
        }
    )
    if args.watch:
        last: object = None

        def changed() -> None:
            nonlocal last
            entry = node.table.get(args.watch)
            now = sorted(entry.whitelist) if entry is not None else None
            if now != last:
                last = now
                emit({"t": time.time(), "whitelist": now})

        node.table.on_change(changed)
        changed()
    try:
        await asyncio.to_thread(sys.stdin.buffer.read)  # until the runner closes our stdin
    finally:
        await node.close()
        await db.dispose()


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--url", required=True)
    p.add_argument("--watch", default="")
    p.add_argument("--no-listeners", action="store_true", help="no listening sockets (store sync only)")
    p.add_argument("--static-port", type=int, default=0, help="static HTTP port (SOCKS5: the next); 0: any")
    asyncio.run(main(p.parse_args()))
