"""System calls per tunnel and a py-spy profile of the gateway's connection path (issue 37.3's profile;
``bench/connsetup.py --perf`` gives the perf one).

    PYTHONPATH=src .venv/bin/python bench/conn_profile.py --strace            # syscalls per tunnel
    PYTHONPATH=src .venv/bin/python bench/conn_profile.py --py-spy PATH/py-spy --out /tmp/prof \\
        [--gateway-args "--no-tunnel-cache"]

Our standalone gateway on cpu 1, the harness's connload (16 slots, a fresh tunnel per ``GET /small``)
and a private nginx on cpu 0, as in connsetup.py. ``--strace``: ``strace -c -f`` attached to the gateway
while connload runs CONNECT and then SOCKS5; each syscall's count divided by the tunnels completed (strace
slows the gateway many times over: its counts hold, its times do not). ``--py-spy``: ``py-spy record
--native --format raw`` (collapsed stacks) per mode. Loopback only.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.connsetup import HARNESS, REPO, Proc, peers, run_connload, start_origin, wait_port  # noqa: E402

LINE = re.compile(r"^\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?(\w+)\s*$")


def strace_counts(path: str) -> dict[str, int]:
    """syscall -> calls, from ``strace -c`` output."""
    out: dict[str, int] = {}
    with open(path) as f:
        for line in f:
            m = LINE.match(line)
            if m and m.group(2) != "total":
                out[m.group(2)] = int(m.group(1))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--duration", type=float, default=2.0)
    ap.add_argument("--python", default=os.path.join(REPO, ".venv", "bin", "python"))
    ap.add_argument("--gateway-args", default="", help="extra standalone flags (e.g. --no-tunnel-cache)")
    ap.add_argument("--strace", action="store_true")
    ap.add_argument("--py-spy", default="", metavar="EXE", help="the py-spy executable")
    ap.add_argument("--out", default="/tmp/conn_profile", help="py-spy output prefix")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="conn_profile.")
    os.chmod(tmp, 0o755)
    exe = os.path.join(tmp, "connload")
    subprocess.run(["cc", "-O2", "-o", exe, os.path.join(HARNESS, "connload.c")], check=True)
    origin = start_origin(tmp)
    cmd, host, port, modes = peers(tmp, args.python)["ours"]
    gw = Proc("ours", [*cmd, *args.gateway_args.split()], "1", os.path.join(tmp, "ours.log"))
    try:
        if not wait_port(host, port):
            sys.exit("the gateway did not start: " + open(os.path.join(tmp, "ours.log")).read()[-500:])
        for mode in modes:
            p = port if mode == "connect" else 1181
            run_connload(exe, mode, host, p, 1)  # warm: cache entries filled, code paths hot
            if args.strace:
                log = os.path.join(tmp, f"strace-{mode}.txt")
                tracer = subprocess.Popen(["strace", "-c", "-f", "-o", log, "-p", str(gw.p.pid)],
                                          stderr=subprocess.DEVNULL)
                time.sleep(1.0)  # attached before the first tunnel
                res = run_connload(exe, mode, host, p, args.duration)
                time.sleep(1.0)  # the last tunnels' close events handled
                tracer.terminate()
                tracer.wait(10)
                n = max(res.get("ok", 0), 1)
                counts = strace_counts(log)
                total = sum(counts.values())
                parts = ", ".join(f"{name} {c / n:.2f}" for name, c in
                                  sorted(counts.items(), key=lambda kv: -kv[1]) if c / n >= 0.05)
                print(f"{mode}: {n} tunnels, {total / n:.1f} system calls per tunnel: {parts}")
            if args.py_spy:
                out = f"{args.out}-{mode}.txt"
                spy = subprocess.Popen([args.py_spy, "record", "--native", "--format", "raw", "--rate", "999",
                                        "-o", out, "-p", str(gw.p.pid)],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                res = run_connload(exe, mode, host, p, args.duration)
                spy.send_signal(2)
                spy.wait(30)
                print(f"{mode}: {res.get('ok', 0)} tunnels, collapsed stacks in {out}")
    finally:
        gw.stop()
        origin.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
