"""IPv6-exit row of the gateway benchmark (issue 16.3), next to the IPv4 one, in a network namespace.

    sudo .venv/bin/python bench/ipv6_exit.py            # 3 s per figure
    DURATION=5 sudo .venv/bin/python bench/ipv6_exit.py

Re-runs itself under ``unshare -n -m``: lo up, ``2001:db8::/48`` routed local to lo (nothing configured per
address, ``net.ipv6.ip_nonlocal_bind`` left 0: the gateway binds with IP_FREEBIND), a private /etc/hosts
(bind-mounted in the new mount namespace only: ``v4.test`` -> 127.0.0.1, ``v6.test`` -> ::1), the shared
harness's nginx origin set-up (one worker, ``/small`` = 100 B) on 127.0.0.1 and [::1], and the harness's
load clients: ``wrk -t1 -c32`` with wrk_proxy.lua (HTTP req/s, keep-alive) and connload.c (CONNECT conn/s,
16 slots), patched here so that the CONNECT target may be a name (v6.test). Rows, same client and origin:

- ``ipv4``: our standalone gateway, one exit 127.0.0.9, destination v4.test (the harness's set-up);
- ``ipv6 rotating``: exits drawn from 2001:db8:0:1::/64 (a new address per request/connection), v6.test;
- ``ipv6 sticky``: the same service with a session id in the username (one address, keep-alive reuse).

The origin's access log is checked: every request of an IPv6 row came from the /64, the rotating row from
as many distinct addresses as connections. Peers: squid (tcp_outgoing_address), tinyproxy (Bind), pproxy,
dante and microsocks each bind ONE fixed outgoing address; none draws an address per request from a
prefix, so none has this row (see bench/README.md). Figures on the shared 2-core machine are noisy.
"""

from __future__ import annotations

import base64
import ipaddress
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
HARNESS = Path(os.environ.get("HARNESS", REPO.parent / "shared" / "bench" / "proxy"))
DURATION = int(os.environ.get("DURATION", "3"))
SUBNET = "2001:db8:0:1::/64"
GATEWAY, HTTP_PORT, ORIGIN_PORT = "127.0.0.7", 9080, 18080
USER, PASSWORD = "benchuser", "benchpass"
HOSTS = "127.0.0.1 localhost v4.test\n::1 v6.test\n"
NGINX = """worker_processes 1; daemon off; pid {tmp}/nginx.pid; error_log {tmp}/nginx.err;
events {{ worker_connections 4096; }}
http {{ log_format peer '$remote_addr $status'; access_log {tmp}/access.log peer;
  keepalive_requests 100000;
  server {{ listen 127.0.0.1:{port}; listen [::1]:{port};
    location /small {{ return 200 '{body}'; }} }} }}
"""


def sh(*cmd: str) -> None:
    subprocess.run(cmd, check=True)


def wait_port(host: str, port: int, timeout: float = 10.0) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        with socket.socket() as s:
            if s.connect_ex((host, port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError(f"{host}:{port} did not open")


def connload(tmp: Path) -> Path:
    """The harness's connload.c, with a name allowed as the CONNECT target (the IPv6 row's v6.test)."""
    src = (HARNESS / "connload.c").read_text()
    old = "parse_loopback(argv[4], &tgt)) {"
    assert old in src, "connload.c changed: update the patch"
    src = src.replace(old, "(parse_loopback(argv[4], &tgt) && mode != M_CONNECT)) {")
    (tmp / "connload.c").write_text(src)
    sh("cc", "-O2", "-o", str(tmp / "connload"), str(tmp / "connload.c"))
    return tmp / "connload"


def measure(tmp: Path, load: Path, host: str, login: str) -> dict[str, float]:
    auth = "Basic " + base64.b64encode(f"{login}:{PASSWORD}".encode()).decode()
    out = tmp / "wrk.json"
    env = {
        **os.environ,
        "WRK_PATH": f"http://{host}:{ORIGIN_PORT}/small",
        "WRK_HOST": f"{host}:{ORIGIN_PORT}",
        "WRK_AUTH": auth,
        "WRK_OUT": str(out),
    }
    wrk = [
        "wrk",
        "-t1",
        "-c32",
        f"-d{DURATION}s",
        "-s",
        str(HARNESS / "wrk_proxy.lua"),
        f"http://{GATEWAY}:{HTTP_PORT}",
    ]
    subprocess.run(
        ["wrk", "-t1", "-c32", "-d1s", *wrk[4:]], env=env, capture_output=True, check=True
    )  # warm-up
    subprocess.run(wrk, env=env, capture_output=True, check=True)
    w = json.loads(out.read_text())
    c = json.loads(
        subprocess.run(
            [
                str(load),
                "connect",
                GATEWAY,
                str(HTTP_PORT),
                host,
                str(ORIGIN_PORT),
                login,
                PASSWORD,
                str(DURATION),
                "16",
                "/small",
            ],
            capture_output=True,
            check=True,
            text=True,
        ).stdout
    )
    return {
        "http_rps": w["requests"] / (w["duration_us"] / 1e6),
        "http_p50_ms": w["lat_p50_us"] / 1000,
        "http_errors": sum(w[k] for k in w if k.startswith("err_")),
        "connect_cps": c["cps"],
        "connect_errors": sum(c["errors"].values()) + c["bad_status"],
    }


def peers(tmp: Path) -> list[str]:
    """The origin's peers since the last call (the access log is truncated)."""
    log = tmp / "access.log"
    lines = log.read_text().splitlines()
    log.write_text("")
    return [ln.split()[0] for ln in lines if ln.endswith(" 200")]


def inner() -> None:
    tmp = Path(tempfile.mkdtemp(prefix="ipv6bench."))
    (tmp / "hosts").write_text(HOSTS)
    sh("ip", "link", "set", "lo", "up")
    sh("ip", "-6", "route", "add", "local", "2001:db8::/48", "dev", "lo")
    sh("mount", "--bind", str(tmp / "hosts"), "/etc/hosts")
    (tmp / "nginx.conf").write_text(NGINX.format(tmp=tmp, port=ORIGIN_PORT, body="x" * 100))
    procs = [subprocess.Popen(["nginx", "-p", str(tmp), "-c", str(tmp / "nginx.conf")])]
    try:
        wait_port("127.0.0.1", ORIGIN_PORT)
        load = connload(tmp)
        rows = {}
        for name, exit_args, host, login in (
            ("ipv4", ["--exit-ip", "127.0.0.9"], "v4.test", USER),
            ("ipv6 rotating", ["--exit-subnet", SUBNET], "v6.test", USER),
            ("ipv6 sticky", ["--exit-subnet", SUBNET], "v6.test", f"{USER}-session-bench"),
        ):
            gw = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "proxyplane.gateway.standalone",
                    "--listen",
                    GATEWAY,
                    "--http-port",
                    str(HTTP_PORT),
                    "--login",
                    USER,
                    "--password",
                    PASSWORD,
                    *exit_args,
                ],
                cwd=REPO,
            )
            procs.append(gw)
            wait_port(GATEWAY, HTTP_PORT)
            peers(tmp)
            row = measure(tmp, load, host, login)
            seen = peers(tmp)
            net = ipaddress.ip_network(SUBNET if "ipv6" in name else "127.0.0.9/32")
            row["origin_requests"] = len(seen)
            row["distinct_exits"] = len(set(seen))
            row["all_from_exit"] = all(ipaddress.ip_address(p) in net for p in seen)
            rows[name] = row
            gw.terminate()
            gw.wait(10)
            procs.remove(gw)
    finally:
        for p in procs:
            p.terminate()
            p.wait(10)
        shutil.rmtree(tmp, ignore_errors=True)
    load_avg = os.getloadavg()
    print(
        f"IPv6-exit row (issue 16.3), {DURATION} s per figure, load average {load_avg[0]:.1f} "
        "(shared 2-core machine: noisy)"
    )
    print(f"{'row':<15} {'HTTP req/s':>10} {'p50 ms':>7} {'CONNECT conn/s':>15} {'distinct exits':>15} ok")
    for name, r in rows.items():
        ok = r["all_from_exit"] and not r["http_errors"] and not r["connect_errors"]
        print(
            f"{name:<15} {r['http_rps']:>10.0f} {r['http_p50_ms']:>7.2f} {r['connect_cps']:>15.0f} "
            f"{r['distinct_exits']:>15} {'yes' if ok else 'NO'}"
        )
    out = REPO / "bench" / "results"
    out.mkdir(exist_ok=True)
    (out / "ipv6_exit.json").write_text(
        json.dumps({"duration_s": DURATION, "load_average": load_avg, "rows": rows}, indent=1) + "\n"
    )


def main() -> None:
    if os.environ.get("IPV6_BENCH_INNER") == "1":
        inner()
        return
    if os.geteuid() != 0:
        raise SystemExit("needs root: creates a network namespace (unshare -n -m)")
    env = {**os.environ, "IPV6_BENCH_INNER": "1", "PYTHONPATH": str(REPO / "src")}
    raise SystemExit(subprocess.run(["unshare", "-n", "-m", sys.executable, __file__], env=env).returncode)


if __name__ == "__main__":
    main()
