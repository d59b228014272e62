"""Memory per idle tunnel of the gateway (issue 14.5): the RSS growth of a standalone gateway process per
open, idle CONNECT (and SOCKS5) tunnel.

    .venv/bin/python bench/tunnel_rss.py --tunnels 5000

A fresh gateway process per tunnel kind (``proxyplane.gateway.standalone``: uvloop + the C tunnel engine,
the production path); this process holds the clients and a loopback echo origin. After a warm-up of 100
tunnels (opened and closed), it opens the tunnels, lets them idle a second, and reads the gateway's VmRSS
from /proc: (after - before) / tunnels, everything included (engine connection records, buffers, the
Python-side records, the kernel's socket memory is not in RSS). Loopback only.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import os
import socket
import subprocess
import sys
import time


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def open_tunnels(kind: str, proxy: int, origin: int, count: int) -> list[asyncio.StreamWriter]:
    auth = base64.b64encode(b"user:pass").decode()
    writers = []
    for _ in range(count):
        reader, writer = await asyncio.open_connection("127.0.0.1", proxy)
        if kind == "connect":
            writer.write(f"CONNECT 127.0.0.1:{origin} HTTP/1.1\r\nProxy-Authorization: Basic {auth}\r\n\r\n"
                         .encode())
            head = await reader.readuntil(b"\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 200"), head
        else:
            writer.write(b"\x05\x01\x02\x01\x04user\x04pass\x05\x01\x00\x01\x7f\x00\x00\x01"
                         + origin.to_bytes(2, "big"))
            reply = await reader.readexactly(2 + 2 + 10)
            assert reply[3] == 0, reply
        writer.write(b"ping")
        assert await reader.readexactly(4) == b"ping"
        writers.append(writer)
    return writers


async def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tunnels", type=int, default=5000)
    args = p.parse_args()

    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
        except (ConnectionError, asyncio.CancelledError):
            pass
        writer.close()

    server = await asyncio.start_server(echo, "127.0.0.1", 0, backlog=4096)
    origin = server.sockets[0].getsockname()[1]
    try:
        for kind in ("connect", "socks5"):
            port = free_port()
            flag = "--http-port" if kind == "connect" else "--socks-port"
            cmd = [sys.executable, "-m", "proxyplane.gateway.standalone", "--listen", "127.0.0.1", flag,
                   str(port), "--exit-ip", "127.0.0.1"]
            gw = subprocess.Popen(cmd, env=dict(os.environ), stdout=subprocess.DEVNULL)
            for _ in range(100):
                try:
                    with socket.create_connection(("127.0.0.1", port), 0.2):
                        break
                except OSError:
                    time.sleep(0.1)
            warm = await open_tunnels(kind, port, origin, 100)
            for w in warm:
                w.close()
            await asyncio.sleep(1.0)
            before = rss_kib(gw.pid)
            writers = await open_tunnels(kind, port, origin, args.tunnels)
            await asyncio.sleep(1.0)
            after = rss_kib(gw.pid)
            per = (after - before) * 1024 / args.tunnels
            print(f"{kind:8} {args.tunnels} idle tunnels: gateway RSS {before} -> {after} KiB, "
                  f"{per:.0f} bytes ({per / 1024:.2f} KiB) per tunnel", flush=True)
            for w in writers:
                w.close()
            gw.terminate()
            gw.wait(10)
    finally:
        server.close()


if __name__ == "__main__":
    asyncio.run(main())
