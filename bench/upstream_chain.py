"""CONNECT through an upstream pool vs through a local exit, in one run (issue 36.4).

Three processes on loopback besides this driver: the origin (a tiny asyncio HTTP server answering
``GET /small`` with 100 bytes), the supplier (a second gateway whose rotating service leaves from
127.0.0.1: "a second gateway node as supplier"), and the gateway under test holding two services, one on
a local exit and one drawing from a pool whose only member is the supplier. The driver opens tunnels
(CONNECT, ``GET /small``, ``Connection: close``) with ``--concurrency`` in flight, alternating the two modes
in rounds, and reads each process's CPU time (utime + stime from /proc) around every measurement:

    PYTHONPATH=src .venv/bin/python -m bench.upstream_chain --rounds 3 --tunnels 2000

Printed per mode: tunnels/s, the gateway's CPU µs per tunnel, and the supplier's CPU µs per tunnel apart
(zero for local exits: the supplier is idle then). Loopback only; shared machines give noisy wall-clock
figures, the CPU µs per tunnel are the figures to compare.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import os
import signal
import socket
import statistics
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TICK = os.sysconf("SC_CLK_TCK")
ORIGIN_PORT, SUPPLIER_PORT, GATEWAY_PORT = 18381, 18382, 18383
PW = "bench-pw"


def free(port: int) -> int:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", port))
    return port


def cpu(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


# -- the child processes --
async def serve_origin() -> None:
    body = b"x" * 99 + b"\n"
    reply = b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\nConnection: close\r\n\r\n" + body

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await reader.readuntil(b"\r\n\r\n")
            writer.write(reply)
            await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", ORIGIN_PORT, backlog=4096)
    async with server:
        await server.serve_forever()


async def serve_gateway(role: str) -> None:
    from proxyplane.core.proxy_chain import parse_template
    from proxyplane.gateway.access import AccessTable, ServiceEntry
    from proxyplane.gateway.context import Settings
    from proxyplane.gateway.server import Gateway, GatewayConfig
    from proxyplane.gateway.upstream_pools import UpstreamEntry

    local = {"127.0.0.1": "us"}
    if role == "supplier":
        entries = [ServiceEntry("sup", "rotating", "acct", PW, exit_ips=local)]
        port = SUPPLIER_PORT
    else:
        entries = [ServiceEntry("local", "rotating", "local", PW, exit_ips=local),
                   ServiceEntry("resold", "rotating", "resold", PW, exit_ips={}, upstream_pool="resi")]
        port = GATEWAY_PORT
    config = GatewayConfig(gateway_host="127.0.0.1", gateway_http_port=port)
    gw = Gateway(AccessTable(entries), config, settings=Settings(allow_loopback=True))
    gw.ctx.upstreams.replace([UpstreamEntry("00000000-0000-0000-0000-000000000001", "resi", 1, "http",
                                            "127.0.0.1", SUPPLIER_PORT, "acct", PW,
                                            parse_template("{user}[-country-{country}]"), "up")])
    await gw.start()
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    await stop.wait()
    await gw.close()


# -- the driver --
async def one_tunnel(login: str) -> bool:
    reader, writer = await asyncio.open_connection("127.0.0.1", GATEWAY_PORT)
    try:
        auth = base64.b64encode(f"{login}:{PW}".encode()).decode()
        target = f"127.0.0.1:{ORIGIN_PORT}"
        head = f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\nProxy-Authorization: Basic {auth}\r\n\r\n"
        writer.write(head.encode())
        reply = await reader.readuntil(b"\r\n\r\n")
        if b" 200 " not in reply.split(b"\r\n", 1)[0]:
            return False
        writer.write(b"GET /small HTTP/1.1\r\nHost: origin\r\nConnection: close\r\n\r\n")
        data = await reader.read()
        return data.endswith(b"x\n")
    finally:
        writer.close()


async def load(login: str, tunnels: int, concurrency: int) -> tuple[int, float]:
    left = tunnels
    ok = 0

    async def worker() -> None:
        nonlocal left, ok
        while left > 0:
            left -= 1
            if await one_tunnel(login):
                ok += 1

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return ok, time.perf_counter() - start


def start(args: list[str]) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": os.path.join(REPO, "src")}
    # as a module: bench/ on sys.path would shadow the standard library's platform (bench/platform.py)
    return subprocess.Popen([sys.executable, "-m", "bench.upstream_chain", *args], env=env, cwd=REPO)


def wait_port(port: int) -> None:
    end = time.monotonic() + 20
    while time.monotonic() < end:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    sys.exit(f"port {port} did not open")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--serve", choices=["origin", "supplier", "gateway"])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--tunnels", type=int, default=2000)
    ap.add_argument("--concurrency", type=int, default=16)
    args = ap.parse_args()
    if args.serve:
        import uvloop

        uvloop.install()  # the production loop (and the C tunnel engine for local exits)
        asyncio.run(serve_origin() if args.serve == "origin" else serve_gateway(args.serve))
        return
    for port in (ORIGIN_PORT, SUPPLIER_PORT, GATEWAY_PORT):
        free(port)
    procs = {name: start(["--serve", name]) for name in ("origin", "supplier", "gateway")}
    try:
        for port in (ORIGIN_PORT, SUPPLIER_PORT, GATEWAY_PORT):
            wait_port(port)
        asyncio.run(load("local", 200, args.concurrency))  # warm-up
        asyncio.run(load("resold", 200, args.concurrency))
        results: dict[str, list[tuple[float, float, float]]] = {}
        for r in range(args.rounds):
            for mode, login in (("local exit", "local"), ("upstream", "resold")):
                before = {n: cpu(p.pid) for n, p in procs.items()}
                ok, secs = asyncio.run(load(login, args.tunnels, args.concurrency))
                after = {n: cpu(p.pid) for n, p in procs.items()}
                n = max(ok, 1)
                gw_us = (after["gateway"] - before["gateway"]) / n * 1e6
                sup_us = (after["supplier"] - before["supplier"]) / n * 1e6
                results.setdefault(mode, []).append((ok / secs, gw_us, sup_us))
                print(f"round {r + 1} {mode:10} ok {ok}/{args.tunnels} {ok / secs:7.0f} tunnels/s  gateway "
                      f"{gw_us:6.1f} us/tunnel  supplier {sup_us:6.1f} us/tunnel", file=sys.stderr,
                      flush=True)
    finally:
        for p in procs.values():
            p.send_signal(signal.SIGTERM)
        for p in procs.values():
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                p.kill()
    print(f"{'mode':10} {'tunnels/s':>10} {'gateway us/tunnel':>18} {'supplier us/tunnel':>19}  (medians)")
    for mode, vals in results.items():
        print(f"{mode:10} {statistics.median(v[0] for v in vals):10.0f} "
              f"{statistics.median(v[1] for v in vals):18.1f} {statistics.median(v[2] for v in vals):19.1f}")


if __name__ == "__main__":
    main()
