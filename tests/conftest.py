"""Shared fixtures: a database migrated by Alembic (SQLite file, or PostgreSQL when
PROXYPLANE_TEST_DATABASE_URL is set), a platform, the real app over httpx's ASGI transport."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from hypothesis import HealthCheck, settings

from proxyplane.core.settings import Settings
from proxyplane.platform import Platform
from proxyplane.storage.engine import Database
from proxyplane.storage.migrate import upgrade
from tests.support import Account, make_account

pytest_plugins = ["tests.watchdog"]  # a hung test ends the run with its stacks (tests/watchdog.py)

# property tests check properties, not speed: on a shared 2-core CI host a slow example is load, not a bug
# (hypothesis's 200 ms deadline and its too_slow health check failed test_autoplan once under load)
settings.register_profile("proxyplane", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("proxyplane")

# the suite's dashboard sign-ups all come from one or two loopback addresses: the sign-up throttle (issue
# 30.4, settings signup_per_address / signup_total) is relaxed for it; its own test sets the real numbers
os.environ.setdefault("PROXYPLANE_SIGNUP_PER_ADDRESS", "1000000")
os.environ.setdefault("PROXYPLANE_SIGNUP_TOTAL", "1000000")


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    return "asyncio"


async def _reset_postgres(url: str) -> None:
    from sqlalchemy import text
    from sqlalchemy.ext.asyncio import create_async_engine

    engine = create_async_engine(url)
    async with engine.begin() as conn:
        await conn.execute(text("DROP SCHEMA IF EXISTS public CASCADE"))
        await conn.execute(text("CREATE SCHEMA public"))
    await engine.dispose()


@pytest.fixture(scope="session")
def database_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    url = os.environ.get("PROXYPLANE_TEST_DATABASE_URL", "")
    if url:
        url = Settings(database_url=url).resolved_database_url()
        asyncio.run(_reset_postgres(url))
    else:
        path = tmp_path_factory.mktemp("db") / "test.db"
        url = f"sqlite+aiosqlite:///{path}"
    asyncio.run(upgrade(url))
    return url


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    return Settings(
        home=tmp_path,
        database_url=database_url,
        secret_key="test-secret-key",
        api_port=8000,
        public_base_url="http://testserver",
    )


@pytest.fixture
async def platform(settings: Settings) -> AsyncIterator[Platform]:
    p = Platform(settings, Database(settings.resolved_database_url()))
    yield p
    await p.close()


@pytest.fixture
async def client(platform: Platform) -> AsyncIterator[httpx.AsyncClient]:
    from proxyplane.app import create_app

    app = create_app(platform)
    transport = httpx.ASGITransport(app=app, client=("127.0.0.9", 50000))
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
        yield c


@pytest.fixture
async def account(platform: Platform) -> Account:
    return await make_account(platform)
