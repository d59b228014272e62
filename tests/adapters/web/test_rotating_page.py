"""Rotating service page (issue 22.6): the plan's use this term against its quota (a bar), no "0 IPs", and
copyable http:// and socks5h:// proxy URLs with the password in the copy button only, with the username
options explained; connection details from the gateway settings."""

from __future__ import annotations

import html
import uuid
from datetime import timedelta

import httpx
import pytest
from sqlalchemy import update

from proxyplane.core.clock import utcnow
from proxyplane.domains.stock.seed import seed_demo
from proxyplane.gateway.metering import UsageRow
from proxyplane.gateway.usage_sink import write_usage
from proxyplane.platform import Platform
from proxyplane.storage.models import Service
from tests.adapters.web.helpers import post_form
from tests.adapters.web.test_buy_and_services import buyer
from tests.domains.stock.support import fresh_stock
from tests.support import bearer

pytestmark = pytest.mark.anyio
GB = 10**9  # decimal, as the plans are sold (core/units.py)


async def buy_rotating(client: httpx.AsyncClient, platform: Platform) -> tuple[str, str]:
    """(service page URL, API key) of a fresh customer's "Rotating datacenter: 10 GB" service."""
    async with platform.db.unit_of_work() as uow:
        await seed_demo(uow.session)
        await uow.commit()
    await fresh_stock(platform, "proxy_datacenter", "MD", 4)
    _, key = await buyer(client, platform, 5_000)
    catalog = (await client.get("/api/v1/customer/catalog?limit=100", headers=bearer(key))).json()["items"]
    product = next(p for p in catalog if p["name"] == "Rotating datacenter: 10 GB")
    r = await post_form(client, "/catalog", f"/catalog/{product['product_id']}", {"idempotency_key": "rot"})
    return r.headers["location"], key


async def test_plan_use_and_proxy_urls(
    client: httpx.AsyncClient, platform: Platform, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PROXYPLANE_GATEWAY_HOST", "127.0.0.44")
    monkeypatch.setenv("PROXYPLANE_GATEWAY_HTTP_PORT", "18080")
    monkeypatch.setenv("PROXYPLANE_GATEWAY_SOCKS_PORT", "11080")
    url, key = await buy_rotating(client, platform)
    sid = url.rsplit("/", 1)[1]
    async with platform.db.unit_of_work() as uow:  # the term started a day ago
        await uow.session.execute(
            update(Service)
            .where(Service.service_id == uuid.UUID(sid))
            .values(current_period_start=utcnow() - timedelta(days=1))
        )
        await uow.commit()
    minute = utcnow().replace(second=0, microsecond=0) - timedelta(hours=2)
    await write_usage(platform.db, [UsageRow(sid, minute, "example.com", requests=7, bytes_down=3 * GB // 2)])
    auth = (
        await client.get(f"/api/v1/customer/services/{sid}/proxy/auth?reveal=true", headers=bearer(key))
    ).json()
    login, password = auth["login"], auth["password"]

    page = (await client.get(url)).text
    assert "0 IPs" not in page
    assert 'id="plan-used">1.5 GB<' in page and "10 GB a month" in page and 'id="plan-left">8.5 GB<' in page
    assert "15.0% used" in page
    assert f"http://{login}:••••••••@127.0.0.44:18080" in page
    assert f"socks5h://{login}:••••••••@127.0.0.44:11080" in page
    copies = [html.unescape(c.split('"', 1)[0]) for c in page.split('data-copy="')[1:]]
    assert f"http://{login}:{password}@127.0.0.44:18080" in copies
    assert f"socks5h://{login}:{password}@127.0.0.44:11080" in copies
    assert f"http://{login}-session-abc123-ttl-10m:{password}@127.0.0.44:18080" in copies
    visible = "".join(part.split('"', 1)[1] for part in page.split('data-copy="')[1:])
    assert password not in page.split('data-copy="', 1)[0] and password not in visible  # only in copy buttons
    assert "-session-&lt;id&gt;" in page and "-country-&lt;cc&gt;" in page
