"""`proxyplane gateway` with a port already taken (issue 22.7): one line on stderr naming the address and
the PROXYPLANE_GATEWAY_... setting, no traceback. Runs the real command in a subprocess (one process,
--workers 0; and --workers 2, where the supervisor stops instead of restarting the workers), then the
same refusal on the static listeners in process."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from proxyplane.gateway.access import AccessTable
from proxyplane.gateway.server import Gateway, GatewayConfig, PortTaken


@pytest.fixture
def held() -> Iterator[int]:
    """A port another program listens on (without SO_REUSEPORT, as most servers)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(1)
    yield sock.getsockname()[1]
    sock.close()


def _env(tmp_path: Path, held: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROXYPLANE_")}
    env.update(
        {
            "PROXYPLANE_HOME": str(tmp_path),
            "PROXYPLANE_GATEWAY_HOST": "127.0.0.1",
            "PROXYPLANE_GATEWAY_HTTP_PORT": str(held),
            "PROXYPLANE_GATEWAY_HTTPS_PORT": "-1",
            "PROXYPLANE_GATEWAY_SOCKS_PORT": "-1",
            "PROXYPLANE_GATEWAY_STATIC_HTTP_PORT": "-1",
            "PROXYPLANE_GATEWAY_STATIC_HTTPS_PORT": "-1",
            "PROXYPLANE_GATEWAY_STATIC_SOCKS_PORT": "-1",
        }
    )
    return env


def test_gateway_command_names_the_taken_port(tmp_path: Path, held: int) -> None:
    code = "from proxyplane.cli import main; main()"
    r = subprocess.run(
        [sys.executable, "-c", code, "gateway", "--workers", "0"],
        env=_env(tmp_path, held),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    assert r.stderr.splitlines()[-1] == (
        f"error: 127.0.0.1:{held} is already in use (PROXYPLANE_GATEWAY_HTTP_PORT): stop the program "
        "holding it or set PROXYPLANE_GATEWAY_HTTP_PORT to a free port"
    )


def test_supervisor_stops_when_a_worker_port_is_taken(tmp_path: Path, held: int) -> None:
    """--workers 2: the workers exit with PORT_TAKEN_EXIT; the supervisor restarts none of them, stops
    with the one line last and exit status 1 (not a restart loop until the timeout)."""
    code = "from proxyplane.cli import main; main()"
    r = subprocess.run(
        [sys.executable, "-c", code, "gateway", "--workers", "2"],
        env=_env(tmp_path, held),
        capture_output=True,
        text=True,
        timeout=60,
    )
    line = (
        f"error: 127.0.0.1:{held} is already in use (PROXYPLANE_GATEWAY_HTTP_PORT): stop the program "
        "holding it or set PROXYPLANE_GATEWAY_HTTP_PORT to a free port"
    )
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    assert r.stderr.splitlines()[-1] == line, r.stderr
    assert r.stderr.count(line) == 1 and "restart in" not in r.stderr, r.stderr
    assert r.stderr.count(" started") <= 2, r.stderr  # each worker forked once


@pytest.mark.anyio
async def test_static_port_taken_is_refused_not_skipped(held: int) -> None:
    config = GatewayConfig(gateway_host=None, static_bind=("127.0.0.1",), static_http_port=held)
    gateway = Gateway(AccessTable(), config)
    with pytest.raises(PortTaken) as taken:
        await gateway.start()
    await gateway.close()
    assert taken.value.setting == "PROXYPLANE_GATEWAY_STATIC_HTTP_PORT"
    assert str(taken.value.code).startswith(f"error: 127.0.0.1:{held} is already in use")
