"""Connection-setup microbenchmark: tunnels per second and proxy CPU per tunnel.

The harness's ``CONNECT conn/s`` / ``SOCKS5 conn/s`` measurement alone (its ``connload.c``, 16 slots,
``GET /small`` with ``Connection: close`` through a fresh tunnel each time), against a private nginx,
for our gateway and the two C peers that lead those columns (tinyproxy, microsocks), alternated in
rounds so drift hits everyone alike. Quicker to iterate on than the whole harness (~10 s per round).

    sudo .venv/bin/python bench/connsetup.py                # 3 rounds, all
    .venv/bin/python bench/connsetup.py --only ours --rounds 5
    .venv/bin/python bench/connsetup.py --only ours --rounds 1 --perf /tmp/ours   # + perf record per mode

The proxy is pinned to cpu 1, connload and nginx to cpu 0 (as in the harness). Loopback only.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HARNESS = os.environ.get("HARNESS", os.path.join(REPO, "..", "shared", "bench", "proxy"))
ORIGIN = ("127.0.0.1", 18180)
EXIT_IP = "127.0.0.9"
USER, PASS = "benchuser", "benchpass"
TICK = os.sysconf("SC_CLK_TCK")


def wait_port(host: str, port: int, timeout: float = 20.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            socket.create_connection((host, port), timeout=0.5).close()
            return True
        except OSError:
            time.sleep(0.05)
    return False


def session_cpu(pid: int, part: int = 0) -> float:
    """CPU seconds of every process in ``pid``'s session (utime + stime; part 1 = utime, 2 = stime)."""
    total = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == pid:  # session id
            total += (int(fields[11]) if part != 2 else 0) + (int(fields[12]) if part != 1 else 0)
    return total / TICK


class Proc:
    def __init__(self, name: str, cmd: list[str], cpus: str, log: str) -> None:
        self.name = name
        self.log = open(log, "w")  # noqa: SIM115 - closed in stop()
        self.p = subprocess.Popen(["taskset", "-c", cpus, *cmd], stdout=self.log, stderr=subprocess.STDOUT,
                                  start_new_session=True)

    def stop(self) -> None:
        try:
            os.killpg(self.p.pid, signal.SIGTERM)
            self.p.wait(5)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(self.p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.log.close()


def start_origin(tmp: str) -> Proc:
    www = os.path.join(tmp, "www")
    os.makedirs(www)
    with open(os.path.join(www, "small"), "w") as f:
        f.write("x" * 99 + "\n")
    for d in ("body", "proxy", "fcgi", "uwsgi", "scgi"):
        os.makedirs(os.path.join(tmp, "ngx", d))
    with open(os.path.join(tmp, "nginx.conf"), "w") as f:
        f.write(f"""worker_processes 1; daemon off; master_process on; pid {tmp}/nginx.pid;
error_log {tmp}/nginx.err warn;
events {{ worker_connections 8192; use epoll; multi_accept on; }}
http {{ access_log off; sendfile on; tcp_nodelay on; keepalive_timeout 120s;
  client_body_temp_path {tmp}/ngx/body; proxy_temp_path {tmp}/ngx/proxy; fastcgi_temp_path {tmp}/ngx/fcgi;
  uwsgi_temp_path {tmp}/ngx/uwsgi; scgi_temp_path {tmp}/ngx/scgi;
  server {{ listen {ORIGIN[0]}:{ORIGIN[1]} backlog=4096; root {www}; location / {{ }} }} }}
""")
    proc = Proc("nginx", ["nginx", "-c", f"{tmp}/nginx.conf", "-p", tmp, "-e", f"{tmp}/nginx.err"], "0",
                os.path.join(tmp, "nginx.log"))
    if not wait_port(*ORIGIN):
        sys.exit("nginx did not start")
    return proc


def peers(tmp: str, python: str, variants: list[str] | None = None, python_b: str = ""
          ) -> dict[str, tuple[list[str], str, int, list[str]]]:
    """name -> (command, listen host, port, modes). ``variants``: NAME=ARGS, our gateway again with ARGS
    (its speed seams off or on: --no-tunnel-cache, --defer-accept 0, --quota-mb N), measured in the same
    rounds (A/B in one run). ``python_b``: ours and each variant again under that interpreter (a wrapper
    running another checkout) as NAME/b, next to its twin."""
    conf = os.path.join(tmp, "tinyproxy.conf")
    with open(conf, "w") as f:
        f.write(f"User nobody\nGroup nogroup\nPort 28889\nListen 127.0.0.3\nBind {EXIT_IP}\nTimeout 60\n"
                f"MaxClients 1000\nBasicAuth {USER} {PASS}\nLogLevel Critical\nDisableViaHeader Yes\n"
                f"ConnectPort 18180\nPidFile \"{tmp}/tinyproxy.pid\"\n")
    ours = [python, "-m", "proxyplane.gateway.standalone", "--listen", "127.0.0.7", "--http-port", "9180",
            "--socks-port", "1181", "--login", USER, "--password", PASS, "--exit-ip", EXIT_IP]
    table = {
        "tinyproxy": (["tinyproxy", "-d", "-c", conf], "127.0.0.3", 28889, ["connect"]),
        "microsocks": (["microsocks", "-i", "127.0.0.6", "-p", "21181", "-u", USER, "-P", PASS,
                        "-b", EXIT_IP], "127.0.0.6", 21181, ["socks5"]),
        "ours": (ours, "127.0.0.7", 9180, ["connect", "socks5"]),
    }
    for i, spec in enumerate(variants or ()):
        name, _, extra = spec.partition("=")
        host = f"127.0.0.{20 + i}"
        cmd = [*ours[:4], host, *ours[5:], *extra.split()]
        table[name] = (cmd, host, 9180, ["connect", "socks5"])
    if python_b:
        for i, name in enumerate([n for n, row in table.items() if row[2] == 9180]):
            cmd, host, port, modes = table.pop(name)
            table[name] = (cmd, host, port, modes)
            host_b = f"127.0.0.{60 + i}"  # cmd: python -m module --listen HOST ...
            table[f"{name}/b"] = ([python_b, *cmd[1:4], host_b, *cmd[5:]], host_b, port, modes)
    return table


def run_connload(exe: str, mode: str, host: str, port: int, duration: float) -> dict[str, Any]:
    import json
    out = subprocess.run(["taskset", "-c", "0", exe, mode, host, str(port), ORIGIN[0], str(ORIGIN[1]), USER,
                          PASS, str(duration), "16", "/small"], capture_output=True, text=True, check=True)
    return dict(json.loads(out.stdout))


def measure(proc: Proc, fn: Callable[[], dict[str, Any]]) -> tuple[float, float, float, dict[str, Any]]:
    """conn/s, proxy CPU us per connection, of which in the kernel, and connload's result."""
    pid = proc.p.pid
    u0, s0, t0 = session_cpu(pid, 1), session_cpu(pid, 2), time.monotonic()
    result = fn()
    u1, s1, t1 = session_cpu(pid, 1), session_cpu(pid, 2), time.monotonic()
    n = max(result.get("ok", 0), 1)
    return n / (t1 - t0), (u1 - u0 + s1 - s0) / n * 1e6, (s1 - s0) / n * 1e6, result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=float, default=3.0)
    ap.add_argument("--only", default="", help="comma list of peers (tinyproxy, microsocks, ours)")
    ap.add_argument("--python", default=os.path.join(REPO, ".venv", "bin", "python"))
    ap.add_argument("--variant", action="append", default=[], metavar="NAME=ARGS",
                    help="our gateway again with ARGS (repeatable), in the same rounds; --only names it too")
    ap.add_argument("--python-b", default="", metavar="PYTHON",
                    help="ours and each variant again under this interpreter (another checkout) as NAME/b")
    ap.add_argument("--perf", default="", help="after the rounds: perf record -g of each peer's proxy during "
                    "one more run per mode, to PREFIX-<peer>-<mode>.data (perf must be installed)")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="connsetup.")
    os.chmod(tmp, 0o755)  # nginx's worker and tinyproxy drop to nobody
    exe = os.path.join(tmp, "connload")
    subprocess.run(["cc", "-O2", "-o", exe, os.path.join(HARNESS, "connload.c")], check=True)
    origin = start_origin(tmp)
    table = peers(tmp, args.python, args.variant, args.python_b)
    names = [n for n in table if not args.only or n.removesuffix("/b") in args.only.split(",")]
    procs: dict[str, Proc] = {}
    results: dict[tuple[str, str], list[tuple[float, float, float]]] = {}
    try:
        for name in names:
            cmd, host, port, _ = table[name]
            if shutil.which(cmd[0]) is None and not os.path.exists(cmd[0]):
                print(f"skip {name}: {cmd[0]} not installed", file=sys.stderr)
                continue
            log = os.path.join(tmp, name.replace("/", "-") + ".log")
            procs[name] = Proc(name, cmd, "1", log)
            if not wait_port(host, port):
                sys.exit(f"{name} did not start: " + open(log).read()[-500:])
        for r in range(args.rounds):
            for name, proc in procs.items():
                _, host, port, modes = table[name]
                for mode in modes:
                    p = port if mode == "connect" or table[name][2] != 9180 else 1181
                    rate, us, sys_us, res = measure(
                        proc, lambda m=mode, h=host, p=p: run_connload(exe, m, h, p, args.duration))
                    errors = {k: v for k, v in res.get("errors", {}).items() if v}
                    results.setdefault((name, mode), []).append((rate, us, sys_us))
                    print(f"round {r + 1} {name:10} {mode:7} {rate:8.0f} conn/s {us:6.1f} us/conn "
                          f"({sys_us:.1f} kernel)" + (f" errors={errors}" if errors else ""),
                          file=sys.stderr, flush=True)
        for name, proc in procs.items() if args.perf else ():
            _, host, port, modes = table[name]
            for mode in modes:
                p = port if mode == "connect" or table[name][2] != 9180 else 1181
                out = f"{args.perf}-{name.replace('/', '-')}-{mode}.data"
                rec = subprocess.Popen(["perf", "record", "-q", "-F", "4999", "-g", "-p", str(proc.p.pid),
                                        "-o", out, "--", "sleep", str(args.duration)])
                run_connload(exe, mode, host, p, args.duration)
                rec.wait()
    finally:
        for proc in procs.values():
            proc.stop()
        origin.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{'peer':10} {'mode':7} {'conn/s (median)':>16} {'us/conn (median)':>17} {'of which kernel':>16}")
    for (name, mode), vals in results.items():
        print(f"{name:10} {mode:7} {statistics.median(v[0] for v in vals):16.0f} "
              f"{statistics.median(v[1] for v in vals):17.1f} {statistics.median(v[2] for v in vals):16.1f}")


if __name__ == "__main__":
    main()
