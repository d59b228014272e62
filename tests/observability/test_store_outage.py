"""The API while its store is unreachable (issue 35.2): every door answers 503 with Retry-After and the
API's JSON error within a bounded time, nothing half done; the store here is a real PostgreSQL address
nobody listens on (connection refused), whatever engine the suite runs on."""

from __future__ import annotations

import re
import time
from collections.abc import AsyncIterator

import httpx
import pytest

from proxyplane.core.settings import Settings
from proxyplane.platform import Platform
from proxyplane.storage.engine import Database
from proxyplane.storage.outage import is_outage
from tests.gateway.conftest import free_port

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def down_client(settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    from proxyplane.app import create_app

    url = f"postgresql+asyncpg://postgres@127.0.0.1:{free_port(['127.0.0.1'])}/none"
    platform = Platform(settings.model_copy(update={"database_url": url}), Database(url))
    transport = httpx.ASGITransport(app=create_app(platform), client=("127.0.0.9", 50000))
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
        yield c
    await platform.close()


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("GET", "/api/v1/customer/wallet/balance", None),
        (
            "POST",
            "/api/v1/billing/composite/order",
            {
                "product_kind": "proxy_datacenter",
                "period_months": 1,
                "segments": [{"country": "US", "count": 1}],
                "use_balance": True,
                "idempotency_key": "outage-1",
            },
        ),
        ("GET", "/api/v1/billing/countries?product_kind=proxy_datacenter", None),
    ],
)
async def test_rest_answers_503_with_retry_after(
    down_client: httpx.AsyncClient, method: str, path: str, body: dict | None
) -> None:
    start = time.perf_counter()
    r = await down_client.request(
        method, path, json=body, headers={"Authorization": "Bearer ppk_0000000000000000000000000000"}
    )
    assert time.perf_counter() - start < 5.0
    assert r.status_code == 503, r.text
    assert r.headers["retry-after"].isdigit()
    assert r.json()["error"] == "service_unavailable"


async def test_legacy_and_dashboard_answer_503(down_client: httpx.AsyncClient) -> None:
    legacy = await down_client.get("/api/services", auth=("ana@example.com", "long password"))
    assert legacy.status_code == 503 and "retry-after" in legacy.headers
    form = await down_client.get("/login")  # a form of the anonymous visitor (no store read)
    csrf = re.search(r'name="csrf" value="([^"]+)"', form.text)
    assert csrf is not None
    page = await down_client.post(
        "/login", data={"email": "a@example.com", "password": "x" * 12, "csrf": csrf.group(1)}
    )
    assert page.status_code == 503 and "retry-after" in page.headers


def test_is_outage_says_no_to_ordinary_errors() -> None:
    assert is_outage(ConnectionRefusedError(111, "refused"))
    assert not is_outage(ValueError("bad"))
    assert not is_outage(KeyError("x"))
