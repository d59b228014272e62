"""The peers of the IPv6-exit bench (bench/ipv6_exit.py): the shared harness's five proxies, each configured
to bind ONE fixed IPv6 source address (none can draw an address per request from a prefix), for the
pinned-exit comparison. Same listen addresses, ports, credentials and auth methods as the harness
(../shared/bench/proxy/bench.py); only the outgoing address differs:

- squid ``tcp_outgoing_address <IPv6>`` (used for IPv6 destinations), HTTP proxy and CONNECT; with
  ``visible_hostname`` set (in a namespace without DNS, squid otherwise looks its host name up again and
  again: 450-550 µs of CPU per request instead of ~200 here);
- tinyproxy ``Bind <IPv6>``, HTTP proxy and CONNECT (closes the client connection after each response);
- pproxy ``http+socks5://host:port/@<IPv6>`` (the local bind after ``@``), HTTP, CONNECT and SOCKS5;
- dante ``external: <IPv6>``, SOCKS5, username method against a private passwd/shadow (DES crypt, bind-
  mounted in a nested mount namespace: the bench's own /etc/hosts stays visible);
- microsocks ``-b <IPv6>``, SOCKS5.

Every peer is started in its own session (its process group is stopped at the end, nothing by name).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

HARNESS_WORK = Path(os.environ.get("BENCH_WORK", "/tmp/proxyplane-bench-harness"))


@dataclass
class Peer:
    name: str
    host: str
    http: int | None = None
    socks: int | None = None
    argv: list[str] = field(default_factory=list)
    closes_client: bool = False  # closes the client connection after each response (wrk read errors)
    skip: str = ""  # why it is not measured ("" = it is)


def _des(password: str) -> str:
    """Traditional DES crypt() hash, as the harness uses (dante checks it per connection, ~5 µs)."""
    lib = ctypes.CDLL(ctypes.util.find_library("crypt") or "libcrypt.so.1")
    lib.crypt.restype = ctypes.c_char_p
    lib.crypt.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
    return str(lib.crypt(password.encode(), b"pb").decode())


def _squid(p: Peer, tmp: Path, exit_ip: str, user: str, password: str) -> list[str]:
    d = tmp / "squid"
    d.mkdir(exist_ok=True)
    shutil.chown(d, "proxy", "proxy")
    digest = subprocess.run(
        ["openssl", "passwd", "-apr1", password], capture_output=True, text=True, check=True
    ).stdout.strip()
    (tmp / "squid.htpasswd").write_text(f"{user}:{digest}\n")
    (tmp / "squid.conf").write_text(
        f"""http_port {p.host}:{p.http}
pid_filename {d}/squid.pid
cache_log {d}/cache.log
access_log none
cache_store_log none
logfile_rotate 0
cache deny all
cache_mem 8 MB
coredump_dir {d}
netdb_filename none
pinger_enable off
via off
visible_hostname proxybench
forwarded_for delete
shutdown_lifetime 0 seconds
max_filedescriptors 16384
dns_nameservers 127.0.0.1
auth_param basic program /usr/lib/squid/basic_ncsa_auth {tmp}/squid.htpasswd
auth_param basic children 2 startup=1 idle=1
auth_param basic credentialsttl 2 hours
auth_param basic realm bench
acl authed proxy_auth REQUIRED
http_access allow authed
http_access deny all
tcp_outgoing_address {exit_ip}
client_persistent_connections on
server_persistent_connections on
"""
    )
    return ["squid", "-N", "-f", str(tmp / "squid.conf")]


def _tinyproxy(p: Peer, tmp: Path, exit_ip: str, user: str, password: str, origin_port: int) -> list[str]:
    d = tmp / "tinyproxy"
    d.mkdir(exist_ok=True)
    shutil.chown(d, "nobody", "nogroup")
    (tmp / "tinyproxy.conf").write_text(
        f"""User nobody
Group nogroup
Port {p.http}
Listen {p.host}
Bind {exit_ip}
Timeout 600
MaxClients 1024
LogLevel Critical
Syslog Off
LogFile "{d}/tinyproxy.log"
PidFile "{d}/tinyproxy.pid"
BasicAuth {user} {password}
ConnectPort {origin_port}
DisableViaHeader Yes
"""
    )
    return ["tinyproxy", "-d", "-c", str(tmp / "tinyproxy.conf")]


def _dante(p: Peer, tmp: Path, exit_ip: str, user: str, password: str) -> list[str]:
    (tmp / "danted.conf").write_text(
        f"""logoutput: {tmp}/danted.log
internal: {p.host} port = {p.socks}
external: {exit_ip}
socksmethod: username
clientmethod: none
user.privileged: root
user.unprivileged: nobody
client pass {{
  from: 127.0.0.0/8 to: 0.0.0.0/0
}}
socks pass {{
  from: 127.0.0.0/8 to: ::/0
  command: connect
  socksmethod: username
}}
"""
    )
    (tmp / "passwd").write_text(
        "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
        f"{user}:x:60100:65534:bench:/nonexistent:/usr/sbin/nologin\n"
    )
    (tmp / "shadow").write_text(
        f"root:*:19000:0:99999:7:::\nnobody:*:19000:0:99999:7:::\n{user}:{_des(password)}:19000:0:99999:7:::\n"
    )
    os.chmod(tmp / "shadow", 0o600)
    script = (
        f"mount --bind {tmp}/passwd /etc/passwd && mount --bind {tmp}/shadow /etc/shadow "
        f"&& exec danted -f {tmp}/danted.conf"
    )
    return ["unshare", "-m", "--propagation", "private", "sh", "-c", script]


def _pproxy_bin() -> str | None:
    for candidate in (os.environ.get("PPROXY", ""), str(HARNESS_WORK / ".venv" / "bin" / "pproxy")):
        if candidate and os.path.exists(candidate):
            return candidate
    return shutil.which("pproxy")


def peers(tmp: Path, exit_ip: str, user: str, password: str, origin_port: int) -> list[Peer]:
    """The peers with their command lines (configs written into ``tmp``); ``skip`` set for a missing one."""
    out = []
    squid = Peer("squid", "127.0.0.2", http=23128)
    tiny = Peer("tinyproxy", "127.0.0.3", http=28888, closes_client=True)
    pp = Peer("pproxy", "127.0.0.4", http=28080, socks=28080)
    dante = Peer("dante", "127.0.0.5", socks=21080)
    ms = Peer("microsocks", "127.0.0.6", socks=21081)
    for p, binary in ((squid, "squid"), (tiny, "tinyproxy"), (dante, "danted"), (ms, "microsocks")):
        if shutil.which(binary) is None:
            p.skip = f"{binary} not installed (../shared/bench/proxy/run.sh --install)"
    if not squid.skip:
        squid.argv = _squid(squid, tmp, exit_ip, user, password)
    if not tiny.skip:
        tiny.argv = _tinyproxy(tiny, tmp, exit_ip, user, password, origin_port)
    if not dante.skip:
        dante.argv = _dante(dante, tmp, exit_ip, user, password)
    if not ms.skip:
        ms.argv = [
            "microsocks",
            "-i",
            ms.host,
            "-p",
            str(ms.socks),
            "-u",
            user,
            "-P",
            password,
            "-b",
            exit_ip,
        ]
    pproxy = _pproxy_bin()
    if pproxy is None:
        pp.skip = "pproxy not found (PPROXY=..., or run bench/gateway_bench.sh once: it creates its venv)"
    else:
        # --auth 0: check credentials on every connection (as the harness does)
        pp.argv = [
            pproxy,
            "-l",
            f"http+socks5://{pp.host}:{pp.http}/@{exit_ip}#{user}:{password}",
            "--auth",
            "0",
        ]
    out += [squid, tiny, pp, dante, ms]
    return out
