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
- ``ipv6 sticky``: the same service with a session id in the username (one address, keep-alive reuse);
- ``ipv6 pinned``: the same service pinned to 2001:db8:0:1::1 (``--mode pinned``);
- the peers, each bound to that same ONE address (bench/ipv6_peers.py: squid ``tcp_outgoing_address``,
  tinyproxy ``Bind``, pproxy ``/@addr``, dante ``external:``, microsocks ``-b``): none can draw an address
  per request from a prefix, so they compare with ``ipv6 pinned`` only. The address is configured on lo
  for them (they bind without IP_FREEBIND); ours binds it with IP_FREEBIND as always.

Columns: HTTP req/s and CONNECT conn/s (HTTP peers), SOCKS5 conn/s (connload ``socks5``, the target sent
as a name: ours, pproxy, dante, microsocks), and the proxy's CPU per request / connection (all processes
of its session, from /proc: the figure that holds best on a loaded machine). As in the harness the proxy
runs on cpu 1, wrk/connload and nginx on cpu 0 (``PIN=0``: no pinning); ``PEERS=squid,dante`` limits the
peers (``PEERS=-``: none).
The origin's access log is checked: every request of an IPv6 row came from the /64 (the peers' and
pinned: from the one address), the rotating row from as many distinct addresses as connections. Figures
on the shared 2-core machine are noisy.
"""

from __future__ import annotations

import base64
import contextlib
import ipaddress
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

# run as a script, bench/ is sys.path[0]: its platform.py would shadow the standard library's `platform`
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]
sys.path.insert(0, os.path.dirname(_HERE))

from bench import ipv6_peers  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
HARNESS = Path(os.environ.get("HARNESS", REPO.parent / "shared" / "bench" / "proxy"))
DURATION = int(os.environ.get("DURATION", "3"))
SUBNET = "2001:db8:0:1::/64"
GATEWAY, HTTP_PORT, SOCKS_PORT, ORIGIN_PORT = "127.0.0.7", 9080, 1081, 18080
PIN_EXIT = (
    "2001:db8:0:1::1"  # ours pinned (the subnet's ::1, standalone --mode pinned) and the peers' one exit
)
PIN = os.environ.get("PIN", "1") != "0" and (os.cpu_count() or 1) >= 2
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
    """The harness's connload.c, with a name allowed as the CONNECT / SOCKS5 target (v6.test; SOCKS5 sends
    it as a domain name, ATYP 3)."""
    src = (HARNESS / "connload.c").read_text()
    patches = {
        "parse_loopback(argv[4], &tgt)) {": "(parse_loopback(argv[4], &tgt) && mode == M_DIRECT)) {",
        "static unsigned char sconn[10];": "static unsigned char sconn[300];\nstatic int sconn_len = 10;",
        "sconn[8] = tport >> 8; sconn[9] = tport & 255;": (
            "sconn[8] = tport >> 8; sconn[9] = tport & 255;\n"
            "    if (inet_pton(AF_INET, argv[4], &tgt) != 1) {\n"
            "        int hl = strlen(argv[4]) & 255;\n"
            "        sconn[3] = 3; sconn[4] = hl; memcpy(sconn + 5, argv[4], hl);\n"
            "        sconn[5 + hl] = tport >> 8; sconn[6 + hl] = tport & 255; sconn_len = 7 + hl;\n"
            "    }"
        ),
        "send_all(s, sconn, 10, S_SOCKS_REPLY)": "send_all(s, sconn, sconn_len, S_SOCKS_REPLY)",
    }
    for old, new in patches.items():
        assert old in src, f"connload.c changed: update the patch ({old})"
        src = src.replace(old, new)
    (tmp / "connload.c").write_text(src)
    sh("cc", "-O2", "-o", str(tmp / "connload"), str(tmp / "connload.c"))
    return tmp / "connload"


def pinned(cpus: str) -> list[str]:
    return ["taskset", "-c", cpus] if PIN else []


def session_cpu(sid: int) -> float:
    """CPU seconds (user + system) of the live processes of session ``sid`` (a row's server: squid's
    helpers, dante's children included while they live)."""
    total = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(fields[3]) == sid:  # session id (field 6 of stat)
            total += int(fields[11]) + int(fields[12])  # utime + stime (fields 14, 15)
    return total / os.sysconf("SC_CLK_TCK")


def conn_rate(load: Path, mode: str, row: Row, port: int, sid: int) -> tuple[float, float, int]:
    """(connections/s, proxy CPU µs per connection, errors) of connload ``mode`` through the row's proxy."""
    argv = [str(load), mode, row.proxy, str(port), row.dest, str(ORIGIN_PORT), row.login, PASSWORD]
    before = session_cpu(sid)
    c = json.loads(
        subprocess.run(
            [*pinned("0"), *argv, str(DURATION), "16", "/small"], capture_output=True, check=True, text=True
        ).stdout
    )
    cpu_us = (session_cpu(sid) - before) * 1e6 / max(c["ok"], 1)
    return c["cps"], cpu_us, sum(c["errors"].values()) + c["bad_status"]


def measure(tmp: Path, load: Path, row: Row, sid: int) -> dict[str, float]:
    out: dict[str, float] = {}
    if row.http:
        auth = "Basic " + base64.b64encode(f"{row.login}:{PASSWORD}".encode()).decode()
        env = {
            **os.environ,
            "WRK_PATH": f"http://{row.dest}:{ORIGIN_PORT}/small",
            "WRK_HOST": f"{row.dest}:{ORIGIN_PORT}",
            "WRK_AUTH": auth,
            "WRK_OUT": str(tmp / "wrk.json"),
        }
        wrk = [*pinned("0"), "wrk", "-t1", "-c32", "-s", str(HARNESS / "wrk_proxy.lua")]
        target = f"http://{row.proxy}:{row.http}"
        subprocess.run([*wrk, "-d1s", target], env=env, capture_output=True, check=True)  # warm-up
        before = session_cpu(sid)
        subprocess.run([*wrk, f"-d{DURATION}s", target], env=env, capture_output=True, check=True)
        cpu = session_cpu(sid) - before
        w = json.loads((tmp / "wrk.json").read_text())
        skip = {"err_read"} if row.closes_client else set()  # tinyproxy: a close after every response
        out["http_rps"] = w["requests"] / (w["duration_us"] / 1e6)
        out["http_p50_ms"] = w["lat_p50_us"] / 1000
        out["http_cpu_us"] = cpu * 1e6 / max(w["requests"], 1)
        out["http_errors"] = sum(w[k] for k in w if k.startswith("err_") and k not in skip)
        out["connect_cps"], out["connect_cpu_us"], out["connect_errors"] = conn_rate(
            load, "connect", row, row.http, sid
        )
    if row.socks:
        out["socks_cps"], out["socks_cpu_us"], out["socks_errors"] = conn_rate(
            load, "socks5", row, row.socks, sid
        )
    return out


def origin_peers(tmp: Path) -> list[str]:
    """The origin's peers since the last call (the access log is truncated)."""
    log = tmp / "access.log"
    lines = log.read_text().splitlines()
    log.write_text("")
    return [ln.split()[0] for ln in lines if ln.endswith(" 200")]


@dataclass
class Row:
    name: str
    argv: list[str]
    proxy: str
    http: int | None
    socks: int | None
    dest: str
    login: str
    exits: str  # the network every origin request of the row must come from
    closes_client: bool = False


def ours(name: str, exit_args: list[str], dest: str, login: str, exits: str) -> Row:
    argv = [
        sys.executable, "-m", "proxyplane.gateway.standalone", "--listen", GATEWAY,
        "--http-port", str(HTTP_PORT), "--socks-port", str(SOCKS_PORT),
        "--login", USER, "--password", PASSWORD, *exit_args,
    ]  # fmt: skip
    return Row(name, argv, GATEWAY, HTTP_PORT, SOCKS_PORT, dest, login, exits)


def rows(tmp: Path) -> tuple[list[Row], dict[str, str]]:
    out = [
        ours("ipv4", ["--exit-ip", "127.0.0.9"], "v4.test", USER, "127.0.0.9/32"),
        ours("ipv6 rotating", ["--exit-subnet", SUBNET], "v6.test", USER, SUBNET),
        ours("ipv6 sticky", ["--exit-subnet", SUBNET], "v6.test", f"{USER}-session-bench", SUBNET),
        ours(
            "ipv6 pinned", ["--exit-subnet", SUBNET, "--mode", "pinned"], "v6.test", USER, f"{PIN_EXIT}/128"
        ),
    ]
    skipped = {}
    wanted = os.environ.get("PEERS", "")
    for p in ipv6_peers.peers(tmp, PIN_EXIT, USER, PASSWORD, ORIGIN_PORT):
        if wanted and p.name not in wanted.split(","):
            continue
        if p.skip:
            skipped[p.name] = p.skip
            continue
        out.append(
            Row(p.name, p.argv, p.host, p.http, p.socks, "v6.test", USER, f"{PIN_EXIT}/128", p.closes_client)
        )
    return out, skipped


def start(row: Row, tmp: Path) -> subprocess.Popen[bytes]:
    log = open(tmp / f"{row.name.replace(' ', '_')}.out", "wb")  # noqa: SIM115 (closed with the process)
    proc = subprocess.Popen(
        [*pinned("1"), *row.argv], cwd=REPO, stdout=log, stderr=log, start_new_session=True
    )
    for port in {row.http, row.socks} - {None}:
        wait_port(row.proxy, int(port or 0), 20.0)
    return proc


def stop(proc: subprocess.Popen[bytes]) -> None:
    """Stop the process group the row's server was started in (its session: squid's helpers, dante's
    children), TERM then KILL."""
    for sig, wait in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue


def inner() -> None:
    tmp = Path(tempfile.mkdtemp(prefix="ipv6bench."))
    os.chmod(tmp, 0o755)  # squid and tinyproxy drop privileges and read their configs here
    (tmp / "hosts").write_text(HOSTS)
    sh("ip", "link", "set", "lo", "up")
    sh("ip", "-6", "route", "add", "local", "2001:db8::/48", "dev", "lo")
    sh("ip", "-6", "addr", "add", f"{PIN_EXIT}/128", "dev", "lo")  # for the peers' plain bind()
    sh("mount", "--bind", str(tmp / "hosts"), "/etc/hosts")
    (tmp / "nginx.conf").write_text(NGINX.format(tmp=tmp, port=ORIGIN_PORT, body="x" * 100))
    nginx = subprocess.Popen([*pinned("0"), "nginx", "-p", str(tmp), "-c", str(tmp / "nginx.conf")])
    results: dict[str, dict[str, float]] = {}
    try:
        wait_port("127.0.0.1", ORIGIN_PORT)
        load = connload(tmp)
        plan, skipped = rows(tmp)
        for row in plan:
            proc = start(row, tmp)
            try:
                origin_peers(tmp)
                r = measure(tmp, load, row, proc.pid)
            finally:
                stop(proc)
            seen = origin_peers(tmp)
            net = ipaddress.ip_network(row.exits)
            r["origin_requests"] = len(seen)
            r["distinct_exits"] = len(set(seen))
            r["all_from_exit"] = bool(seen) and all(ipaddress.ip_address(p) in net for p in seen)
            results[row.name] = r
    finally:
        nginx.terminate()
        nginx.wait(10)
        shutil.rmtree(tmp, ignore_errors=True)
    report(results, skipped)


def report(results: dict[str, dict[str, float]], skipped: dict[str, str]) -> None:
    load_avg = os.getloadavg()
    print(
        f"IPv6-exit rows (issue 16), {DURATION} s per figure, proxy on cpu 1, clients+origin on cpu 0"
        f"{'' if PIN else ' (not pinned)'}, load average {load_avg[0]:.1f} (shared 2-core machine: noisy)"
    )
    print(
        f"{'row':<15} {'HTTP req/s':>10} {'p50 ms':>7} {'CONNECT conn/s':>15} {'SOCKS5 conn/s':>14} "
        f"{'distinct exits':>15} ok   proxy CPU µs per request / CONNECT / SOCKS5 connection"
    )

    def cell(r: dict[str, float], key: str, width: int, fmt: str = ".0f") -> str:
        return f"{r[key]:>{width}{fmt}}" if key in r else f"{'-':>{width}}"

    for name, r in results.items():
        errors = sum(r.get(k, 0) for k in ("http_errors", "connect_errors", "socks_errors"))
        ok = r["all_from_exit"] and not errors
        print(
            f"{name:<15} {cell(r, 'http_rps', 10)} {cell(r, 'http_p50_ms', 7, '.2f')} "
            f"{cell(r, 'connect_cps', 15)} {cell(r, 'socks_cps', 14)} {r['distinct_exits']:>15} "
            f"{'yes' if ok else 'NO ':<4} {cell(r, 'http_cpu_us', 6)} / {cell(r, 'connect_cpu_us', 5)} / "
            f"{cell(r, 'socks_cpu_us', 5)}"
        )
    for name, why in skipped.items():
        print(f"{name:<15} skipped: {why}")
    out = REPO / "bench" / "results"
    out.mkdir(exist_ok=True)
    (out / "ipv6_exit.json").write_text(
        json.dumps(
            {
                "duration_s": DURATION,
                "pinned": PIN,
                "load_average": load_avg,
                "rows": results,
                "skipped": skipped,
            },
            indent=1,
        )
        + "\n"
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
