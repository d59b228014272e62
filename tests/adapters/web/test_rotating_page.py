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
from proxyplane.domains.quotas.payg import hour_of
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


async def test_pay_as_you_go_plan_use(client: httpx.AsyncClient, platform: Platform) -> None:
    """The demo pay-as-you-go plan's page (issue 32.4): used bytes, the rate per started unit, the units
    charged and owed, no add-traffic form; refused for its balance, it says insufficient_balance and how to
    top up."""
    async with platform.db.unit_of_work() as uow:
        await seed_demo(uow.session)
        await uow.commit()
    await fresh_stock(platform, "proxy_datacenter", "MD", 4)
    _, key = await buyer(client, platform, 700)
    catalog = (await client.get("/api/v1/customer/catalog?limit=100", headers=bearer(key))).json()["items"]
    product = next(p for p in catalog if p["name"] == "Rotating datacenter: pay as you go")
    r = await post_form(client, "/catalog", f"/catalog/{product['product_id']}", {"idempotency_key": "payg"})
    url = r.headers["location"]
    sid = url.rsplit("/", 1)[1]
    # every flush at one time of one hour: the hourly charge's bucket never depends on the wall clock
    # (a run across an hour boundary would otherwise charge the 3rd unit instead of owing it)
    minute = hour_of(utcnow())

    async def used(nbytes: int) -> str:
        row = UsageRow(sid, minute, "example.com", requests=1, bytes_down=nbytes)
        await write_usage(platform.db, [row], now=minute)
        return (await client.get(url)).text

    page = await used(3 * GB // 2)  # 2 units started: charged now (400 of 700 cents)
    assert 'id="plan-used">1.5 GB<' in page and "per started 1 GB" in page
    assert 'id="payg-billed">2 units charged' in page and 'id="add-traffic"' not in page
    page = await used(GB)  # a 3rd unit in the same hour: owed, covered by the 300 cents left
    assert "1 more with the next hourly charge" in page and 'id="payg-refused"' not in page
    page = await used(GB // 2)  # the 3rd unit used up; 300 - 200 owed cannot pay a 4th: refused
    assert 'id="payg-refused"' in page and "insufficient_balance" in page and 'href="/wallet"' in page
