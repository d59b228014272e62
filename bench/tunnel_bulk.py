"""Bulk through one tunnel: proxy CPU per MB of our gateway, two or more ways in the same rounds
(issue 37.2: splice for long tunnels). The shared harness's ``loadclient.py bulk`` (GET /big repeatedly
over one CONNECT or SOCKS5 tunnel, keep-alive) against a private nginx serving a 16 MB file; the proxy on
cpu 1, the client and nginx on cpu 0. Loopback only.

    PYTHONPATH=src .venv/bin/python bench/tunnel_bulk.py --variant "copy=--splice-after 0" --rounds 3

``ours`` is the default build; each ``--variant NAME=ARGS`` is our gateway again with ARGS.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.connsetup import (  # noqa: E402
    HARNESS,
    ORIGIN,
    PASS,
    REPO,
    USER,
    Proc,
    peers,
    session_cpu,
    start_origin,
    wait_port,
)


def bulk(mode: str, host: str, port: int, duration: float, count: int) -> dict[str, float]:
    client = os.path.join(HARNESS, "loadclient.py")
    argv = ["taskset", "-c", "0", sys.executable, client, "bulk", "--mode", mode, "--proxy", f"{host}:{port}",
            "--target", f"{ORIGIN[0]}:{ORIGIN[1]}", "--user", USER, "--password", PASS, "--path", "/big",
            "--duration", str(duration if not count else 600), "--max-count", str(count or 1000)]
    out = subprocess.run(argv, capture_output=True, text=True, check=True)
    return dict(json.loads(out.stdout))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=float, default=3.0)
    ap.add_argument("--python", default=os.path.join(REPO, ".venv", "bin", "python"))
    ap.add_argument("--variant", action="append", default=[], metavar="NAME=ARGS")
    ap.add_argument("--only", default="", help="run only this way (ours or a variant's NAME)")
    ap.add_argument("--count", type=int, default=0, help="GETs of the 16 MB file per tunnel (fixed work, for "
                    "timing the whole process from outside) instead of --duration")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="tunnel_bulk.")
    os.chmod(tmp, 0o755)
    origin = start_origin(tmp)
    with open(os.path.join(tmp, "www", "big"), "wb") as f:
        f.write(os.urandom(1 << 20) * 16)
    table = {name: spec for name, spec in peers(tmp, args.python, args.variant).items()
             if (name == "ours" or name in {v.partition("=")[0] for v in args.variant})
             and (not args.only or name == args.only)}
    procs: dict[str, Proc] = {}
    results: dict[tuple[str, str], list[tuple[float, float, float]]] = {}
    try:
        for name, (cmd, host, port, _) in table.items():
            procs[name] = Proc(name, cmd, "1", os.path.join(tmp, f"{name}.log"))
            if not wait_port(host, port):
                sys.exit(f"{name} did not start")
        for r in range(args.rounds):
            for name, (_, host, port, _) in table.items():
                for mode in ("connect", "socks5"):
                    pid = procs[name].p.pid
                    c0, k0 = session_cpu(pid), session_cpu(pid, 2)
                    res = bulk(mode, host, port if mode == "connect" else 1181, args.duration, args.count)
                    c1, k1 = session_cpu(pid), session_cpu(pid, 2)
                    mb = max(res["bytes"], 1) / 1e6
                    row = (float(res["MBps"]), (c1 - c0) / mb * 1e6, (k1 - k0) / mb * 1e6)
                    results.setdefault((name, mode), []).append(row)
                    print(f"round {r + 1} {name:10} {mode:7} {row[0]:7.0f} MB/s {row[1]:6.1f} us/MB "
                          f"({row[2]:.1f} kernel)", file=sys.stderr, flush=True)
    finally:
        for proc in procs.values():
            proc.stop()
        origin.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{'way':10} {'mode':7} {'MB/s (median)':>14} {'us/MB (median)':>15} {'of which kernel':>16}")
    for (name, mode), vals in results.items():
        print(f"{name:10} {mode:7} {statistics.median(v[0] for v in vals):14.0f} "
              f"{statistics.median(v[1] for v in vals):15.1f} {statistics.median(v[2] for v in vals):16.1f}")


if __name__ == "__main__":
    main()
