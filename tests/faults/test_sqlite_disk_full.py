"""SQLite's disk full (issue 35.5): the platform's SQLite file on a small tmpfs of its own (mounted by the
test: root only), the rest of the filesystem filled by a file. Orders and other writes answer 507 with
Retry-After and the JSON error, at once; reads still answer; nothing is half-written (integrity check,
balance, ledger, services, stock counts); once the filler is removed the retry with the same idempotency
key completes once. Whatever engine the suite runs on: the store here is its own SQLite file."""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
from sqlalchemy import text

from proxyplane.core.settings import Settings
from proxyplane.platform import Platform
from proxyplane.storage.engine import Database
from proxyplane.storage.migrate import upgrade
from tests.domains.stock.support import fresh_stock

from .api import ORDER, balance, broken_books, buyer, order_body, services_of

pytestmark = pytest.mark.anyio
DISK_MB = 24


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    disk = tmp_path / "disk"
    disk.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={DISK_MB}m", "tmpfs", str(disk)], capture_output=True
    )
    if mounted.returncode != 0:
        pytest.skip(f"tmpfs mount refused: {mounted.stderr.decode()[:200]}")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


@pytest.fixture
async def full_platform(small_disk: Path, tmp_path: Path) -> AsyncIterator[Platform]:
    url = f"sqlite+aiosqlite:///{small_disk / 'store.db'}"
    await upgrade(url)
    settings = Settings(
        home=tmp_path / "home", database_url=url, secret_key="test-secret-key", public_base_url="http://t"
    )
    platform = Platform(settings, Database(url))
    try:
        yield platform
    finally:
        await platform.close()


def fill(disk: Path) -> Path:
    """A file taking every free byte of `disk`."""
    filler = disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    try:
        for size in (1 << 20, 4096, 512):  # unbuffered: every byte that fits is written
            with contextlib.suppress(OSError):
                while os.write(fd, b"\0" * size) == size:
                    pass
    finally:
        os.close(fd)
    return filler


async def test_disk_full_answers_507_writes_nothing_and_recovers(
    full_platform: Platform, small_disk: Path
) -> None:
    from proxyplane.app import create_app

    platform = full_platform
    addresses = await fresh_stock(platform, "proxy_datacenter", "US", 10)
    customer, key = await buyer(platform, 100_000)
    auth = {"Authorization": f"Bearer {key}"}
    transport = httpx.ASGITransport(app=create_app(platform), client=("127.0.0.9", 50000))
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        assert (await client.post(ORDER, json=order_body("US", 8), headers=auth)).status_code == 201
        before = await balance(platform, customer), await services_of(platform, customer)
        async with platform.db.engine.connect() as conn:  # an empty WAL: the next write must grow a file
            await conn.execute(text("PRAGMA wal_checkpoint(TRUNCATE)"))
        filler = fill(small_disk)
        body = order_body("US", 8)
        start = time.perf_counter()
        refused = await client.post(ORDER, json=body, headers=auth)
        took = time.perf_counter() - start
        assert refused.status_code == 507, refused.text
        assert refused.json()["error"] == "insufficient_storage"
        assert refused.headers["retry-after"].isdigit() and took < 5.0
        ticket = {"subject": "disk", "message": "full"}
        assert (await client.post("/api/v1/customer/tickets", json=ticket, headers=auth)).status_code == 507
        read = await client.get("/api/v1/customer/wallet/balance", headers=auth)
        assert read.status_code == 200, read.text  # reads still answer
        assert (await balance(platform, customer), await services_of(platform, customer)) == before
        async with platform.db.engine.connect() as conn:
            assert (await conn.execute(text("PRAGMA integrity_check"))).scalar_one() == "ok"
        filler.unlink()  # the operator frees space
        retried = await client.post(ORDER, json=body, headers=auth)
        assert retried.status_code == 201, retried.text
        again = await client.post(ORDER, json=body, headers=auth)
        assert again.json()["service"]["service_id"] == retried.json()["service"]["service_id"]
    assert len(await services_of(platform, customer)) == len(before[1]) + 1
    assert await broken_books(platform, [customer], addresses) == {}
    print(
        f"\nfault figures: SQLite disk full ({DISK_MB} MB tmpfs) | order answered 507 + Retry-After in "
        f"{took * 1000:.0f} ms, reads 200 | half-written 0 (integrity ok, balance and services unchanged) "
        f"| after space returned: the retry with its key placed once (goal: once)",
        flush=True,
    )
