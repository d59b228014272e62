"""`proxyplane serve` with a port already taken (issue 22.7): one line on stderr naming the address and
the PROXYPLANE_... setting, exit 2, no traceback, nothing started. Runs the real command in a subprocess."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from proxyplane.core.gateway_settings import GatewaySettings
from proxyplane.core.listen_check import planned
from proxyplane.core.settings import Settings


@pytest.fixture
def held() -> Iterator[int]:
    """A port some other program listens on (no SO_REUSEPORT, as most servers)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(1)
    yield sock.getsockname()[1]
    sock.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def serve(tmp_path: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("PROXYPLANE_")}
    clean.update({"PROXYPLANE_HOME": str(tmp_path), **env})
    code = "from proxyplane.cli import main; main()"
    return subprocess.run(
        [sys.executable, "-c", code, "serve", *args], env=clean, capture_output=True, text=True, timeout=60
    )


def test_api_port_taken(tmp_path: Path, held: int) -> None:
    r = serve(tmp_path, {"PROXYPLANE_API_PORT": str(held)})
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.splitlines() == [
        f"error: 127.0.0.1:{held} is already in use (PROXYPLANE_API_PORT): stop the program holding it "
        "or set PROXYPLANE_API_PORT (or `serve --port`) to a free port"
    ]
    assert not (tmp_path / "proxyplane.db").exists()  # nothing started, not even the migrations


def test_gateway_port_taken(tmp_path: Path, held: int) -> None:
    env = {"PROXYPLANE_GATEWAY_HTTP_PORT": str(held)}
    r = serve(tmp_path, env, "--port", str(free_port()))
    assert r.returncode == 2 and "Traceback" not in r.stderr
    [line] = r.stderr.splitlines()
    assert line.startswith(f"error: 127.0.0.1:{held} is already in use (PROXYPLANE_GATEWAY_HTTP_PORT)")


def test_planned_listeners_follow_the_settings() -> None:
    gw = GatewaySettings(http_port=9001, https_port=-1, socks_port=9002, static_bind="0.0.0.0,::")
    gw = gw.model_copy(update={"static_http_port": 9003, "static_https_port": -1, "static_socks_port": 9004})
    got = [(x.host, x.port, x.setting) for x in planned(Settings(api_port=9000), gw, 9005)]
    assert got == [
        ("127.0.0.1", 9000, "PROXYPLANE_API_PORT"),
        ("127.0.0.1", 9005, "PROXYPLANE_LEGACY_PORT"),
        ("127.0.0.1", 9001, "PROXYPLANE_GATEWAY_HTTP_PORT"),
        ("127.0.0.1", 9002, "PROXYPLANE_GATEWAY_SOCKS_PORT"),
        ("0.0.0.0", 9003, "PROXYPLANE_GATEWAY_STATIC_HTTP_PORT"),
        ("::", 9003, "PROXYPLANE_GATEWAY_STATIC_HTTP_PORT"),
        ("0.0.0.0", 9004, "PROXYPLANE_GATEWAY_STATIC_SOCKS_PORT"),
        ("::", 9004, "PROXYPLANE_GATEWAY_STATIC_SOCKS_PORT"),
    ]
    assert [
        x.port for x in planned(Settings(api_port=9000), gw.model_copy(update={"in_serve": False}), None)
    ] == [9000]
