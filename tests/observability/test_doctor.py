"""`proxyplane doctor` on a real configuration: a migrated database, a secret key that decrypts the stored
proxy passwords (and one that does not), the exit IPs of the stock local to this host, a port in use, the
descriptor limit against the largest connection limit sold."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from proxyplane.cli import main
from proxyplane.core.settings import get_settings
from proxyplane.platform import Platform
from tests.support import Account

from .support import static_service

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def doctor(monkeypatch: pytest.MonkeyPatch, database_url: str, home: Path, secret: str, *args: str):
    monkeypatch.setenv("PROXYPLANE_DATABASE_URL", database_url)
    monkeypatch.setenv("PROXYPLANE_HOME", str(home))
    monkeypatch.setenv("PROXYPLANE_SECRET_KEY", secret)
    monkeypatch.setenv("PROXYPLANE_GATEWAY_IN_SERVE", "false")
    get_settings.cache_clear()
    return await asyncio.to_thread(CliRunner().invoke, main, ["doctor", *args])  # the CLI runs its own loop


async def test_doctor_reports_what_to_fix(
    client: httpx.AsyncClient,
    platform: Platform,
    account: Account,
    database_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    await static_service(client, platform, account)  # a stored proxy password, a stock IP on loopback
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        monkeypatch.setenv("PROXYPLANE_API_PORT", str(taken.getsockname()[1]))
        result = await doctor(monkeypatch, database_url, tmp_path, "test-secret-key")
    lines = result.output.splitlines()
    assert result.exit_code == 1, result.output
    assert any(line.startswith("ok   database") for line in lines)
    assert any(line.startswith("ok   secret key") and "decrypts" in line for line in lines)
    assert any(line.startswith("ok   exit IPs") and "local to this host" in line for line in lines)
    assert any(line.startswith("FIX  ports") and "PROXYPLANE_API_PORT" in line for line in lines)
    assert any(line.startswith("ok   descriptors") for line in lines)

    wrong = await doctor(monkeypatch, database_url, tmp_path, "another-key", "--no-ports")
    assert wrong.exit_code == 1, wrong.output
    assert any(line.startswith("FIX  secret key") and "differs" in line for line in wrong.output.splitlines())
    fine = await doctor(monkeypatch, database_url, tmp_path, "test-secret-key", "--no-ports")
    assert fine.exit_code == 0, fine.output
    assert fine.output.splitlines()[-1] == "nothing to fix"
    get_settings.cache_clear()
