"""Rotating HTTP against keep-alive in one run (issue 37.3): plain-HTTP proxy requests/s and proxy CPU
per request of our gateway, three ways, alternated in rounds so the machine's drift hits each alike:

- ``keepalive``: one exit IP; the upstream connection is pooled and reused (the best case);
- ``rotating``: 64 listed exit IPs, a new exit drawn for every request (the pool keeps one upstream per
  exit and destination, so most requests still reuse one);
- ``rotating-new``: the same, against an origin port that closes every connection after one response
  (``keepalive_requests 1``); its ``Connection: close`` reaches the client, which reconnects: a new client
  connection (accepted by the C engine, handed to the Python HTTP protocol) and a new upstream connection
  per request, what a rotating customer that opens a connection per request costs when nothing is reused.

    PYTHONPATH=src .venv/bin/python bench/rotating_http.py --rounds 3 --duration 3

wrk (16 connections, keep-alive to the proxy) with the shared harness's wrk_proxy.lua, against a private
nginx on 127.0.0.1:18180 (and 18181 for rotating-new); the proxy on cpu 1, wrk and nginx on cpu 0.
Loopback only.
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

from bench.connsetup import HARNESS, ORIGIN, PASS, REPO, USER, Proc, session_cpu, start_origin, wait_port  # noqa: E402

CLOSING = (ORIGIN[0], ORIGIN[1] + 1)  # an origin port that closes after one response


def gateway(python: str, host: str, exits: list[str]) -> list[str]:
    cmd = [python, "-m", "proxyplane.gateway.standalone", "--listen", host, "--http-port", "9190",
           "--login", USER, "--password", PASS]
    for ip in exits:
        cmd += ["--exit-ip", ip]
    return cmd


def closing_origin(tmp: str) -> Proc:
    """A second nginx whose every response ends its connection."""
    conf = os.path.join(tmp, "nginx-closing.conf")
    www = os.path.join(tmp, "www")
    with open(conf, "w") as f:
        f.write(f"""worker_processes 1; daemon off; master_process on; pid {tmp}/nginx2.pid;
error_log {tmp}/nginx2.err warn;
events {{ worker_connections 8192; use epoll; multi_accept on; }}
http {{ access_log off; sendfile on; tcp_nodelay on; keepalive_requests 1;
  client_body_temp_path {tmp}/ngx/body; proxy_temp_path {tmp}/ngx/proxy; fastcgi_temp_path {tmp}/ngx/fcgi;
  uwsgi_temp_path {tmp}/ngx/uwsgi; scgi_temp_path {tmp}/ngx/scgi;
  server {{ listen {CLOSING[0]}:{CLOSING[1]} backlog=4096; root {www}; location / {{ }} }} }}
""")
    proc = Proc("nginx2", ["nginx", "-c", conf, "-p", tmp, "-e", f"{tmp}/nginx2.err"], "0",
                os.path.join(tmp, "nginx2.log"))
    if not wait_port(*CLOSING):
        sys.exit("nginx (closing) did not start")
    return proc


def run_wrk(tmp: str, host: str, target: tuple[str, int], duration: float) -> dict[str, int]:
    import base64

    out = os.path.join(tmp, "wrk.json")
    auth = "Basic " + base64.b64encode(f"{USER}:{PASS}".encode()).decode()
    where = f"{target[0]}:{target[1]}"
    env = dict(os.environ, WRK_PATH=f"http://{where}/small", WRK_HOST=where, WRK_AUTH=auth, WRK_OUT=out)
    subprocess.run(["taskset", "-c", "0", "wrk", "-t1", "-c16", f"-d{max(1, round(duration))}s", "--timeout",
                    "5s", "-s", os.path.join(HARNESS, "wrk_proxy.lua"), f"http://{host}:9190/"], env=env,
                   check=True, capture_output=True)
    with open(out) as f:
        return dict(json.load(f))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=float, default=3.0)
    ap.add_argument("--python", default=os.path.join(REPO, ".venv", "bin", "python"))
    ap.add_argument("--variant", action="append", default=[], metavar="NAME=ARGS",
                    help="rotating-new again with the gateway's ARGS (a seam off), in the same rounds")
    ap.add_argument("--python-b", default="", metavar="PYTHON",
                    help="every way again with this interpreter (a wrapper that runs another checkout), "
                    "as NAME/b in the same rounds: an A/B of two code versions")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="rotating_http.")
    os.chmod(tmp, 0o755)
    origin = start_origin(tmp)
    closing = closing_origin(tmp)
    many = [f"127.0.3.{i}" for i in range(1, 65)]
    ways = {"keepalive": ("127.0.0.31", ["127.0.0.9"], ORIGIN), "rotating": ("127.0.0.32", many, ORIGIN),
            "rotating-new": ("127.0.0.33", many, CLOSING)}
    extra: dict[str, list[str]] = {}
    for i, spec in enumerate(args.variant):
        name, _, flags = spec.partition("=")
        ways[name] = (f"127.0.0.{40 + i}", many, CLOSING)
        extra[name] = flags.split()
    pythons = {name: args.python for name in ways}
    for i, name in enumerate(list(ways) if args.python_b else []):
        host, exits, target = ways[name]
        ways[f"{name}/b"] = (f"127.0.0.{50 + i}", exits, target)
        extra[f"{name}/b"], pythons[f"{name}/b"] = extra.get(name, []), args.python_b
    if args.python_b:  # each way next to its B twin in every round
        ways = {n: ways[n] for a in [n for n in ways if not n.endswith("/b")] for n in (a, f"{a}/b")}
    procs: dict[str, Proc] = {}
    results: dict[str, list[tuple[float, float, float]]] = {}
    try:
        for name, (host, exits, _) in ways.items():
            cmd = gateway(pythons[name], host, exits) + extra.get(name, [])
            log = os.path.join(tmp, name.replace("/", "-") + ".log")
            procs[name] = Proc(name, cmd, "1", log)
            if not wait_port(host, 9190):
                sys.exit(f"{name} did not start: " + open(log).read()[-500:])
        for host, _, target in ways.values():  # warm-up: pools filled, code paths hot
            run_wrk(tmp, host, target, 1)
        for r in range(args.rounds):
            for name, (host, _, target) in ways.items():
                pid = procs[name].p.pid
                c0, k0 = session_cpu(pid), session_cpu(pid, 2)
                res = run_wrk(tmp, host, target, args.duration)
                c1, k1 = session_cpu(pid), session_cpu(pid, 2)
                n = max(res["requests"], 1)
                errors = {k: v for k, v in res.items() if k.startswith("err_") and v}
                row = (res["requests"] / (res["duration_us"] / 1e6), (c1 - c0) / n * 1e6, (k1 - k0) / n * 1e6)
                results.setdefault(name, []).append(row)
                print(f"round {r + 1} {name:12} {row[0]:8.0f} req/s {row[1]:6.1f} us/req "
                      f"({row[2]:.1f} kernel)" + (f" {errors}" if errors else ""), file=sys.stderr,
                      flush=True)
    finally:
        for proc in procs.values():
            proc.stop()
        closing.stop()
        origin.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{'way':12} {'req/s (median)':>15} {'us/req (median)':>16} {'of which kernel':>16}")
    for name, vals in results.items():
        print(f"{name:12} {statistics.median(v[0] for v in vals):15.0f} "
              f"{statistics.median(v[1] for v in vals):16.1f} {statistics.median(v[2] for v in vals):16.1f}")


if __name__ == "__main__":
    main()
