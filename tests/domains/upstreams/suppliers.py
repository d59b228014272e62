"""Upstream proxy suppliers on loopback for the tests: pproxy (PyPI) processes speaking HTTP CONNECT and
SOCKS5 with credentials, started and stopped per test."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import subprocess
import sys
from collections.abc import AsyncIterator

# pproxy installs uvloop's policy and then calls asyncio.get_event_loop(), which uvloop's policy refuses
# outside a running loop: the child keeps the default policy with a loop set
_RUN = (
    "import asyncio, sys, uvloop; uvloop.install = lambda: None; "
    "asyncio.set_event_loop(asyncio.new_event_loop()); "
    "from pproxy.server import main; sys.argv[0] = 'pproxy'; main()"
)


def free_tcp_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def wait_listening(port: int, timeout: float = 10.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            if loop.time() > deadline:
                raise
            await asyncio.sleep(0.05)
            continue
        writer.close()
        return


@contextlib.asynccontextmanager
async def pproxy(scheme: str, user: str = "sup", password: str = "sup-pw", port: int | None = None
                 ) -> AsyncIterator[int]:
    """A pproxy process serving ``scheme`` ("http" or "socks5") on 127.0.0.1 (``port``, or a free one);
    yields its port."""
    port = port or free_tcp_port()
    proc = start_pproxy(scheme, user, password, port)
    try:
        await wait_listening(port)
        yield port
    finally:
        stop(proc)


def start_pproxy(scheme: str, user: str, password: str, port: int) -> subprocess.Popen[bytes]:
    """The pproxy process (not waited for: ``wait_listening``, or a blocking caller's own loop)."""
    return subprocess.Popen(
        [sys.executable, "-c", _RUN, "-l", f"{scheme}://127.0.0.1:{port}#{user}:{password}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
