"""The service page's traffic part (issue 32), through the real app: a monthly plan shows its period, when
it resets and what is left; the add-traffic form buys GB at the rate shown (charged once, invoiced, the
limit raised), refuses bad GB and a rate that changed since the page was shown (nothing charged); the
auto top-up form turns it on and off; a used-up quota says so."""

from __future__ import annotations

import uuid

import httpx
import pytest
from sqlalchemy import update

from proxyplane.domains.quotas import service as quotas
from proxyplane.domains.wallet.service import balance
from proxyplane.platform import Platform
from proxyplane.storage.models.quotas import ServiceQuota
from tests.adapters.web.helpers import follow, post_form
from tests.adapters.web.test_rotating_page import buy_rotating
from tests.domains.quotas.support import quota_row
from tests.support import bearer

pytestmark = pytest.mark.anyio
GB = quotas.GB


async def wallet(platform: Platform, customer_id: int) -> int:
    async with platform.db.unit_of_work(write=False) as uow:
        return await balance(uow.session, customer_id)


async def test_add_traffic_and_auto_topup_forms(client: httpx.AsyncClient, platform: Platform) -> None:
    url, _key = await buy_rotating(client, platform)  # "Rotating datacenter: 10 GB", monthly, 100 c/GB
    sid = uuid.UUID(url.rsplit("/", 1)[1])
    customer = await customer_of(platform, sid)
    start = await wallet(platform, customer)
    page = (await client.get(url)).text
    assert "Plan use this month" in page and "10 GB a month" in page and "; resets " in page
    assert 'id="add-traffic"' in page and "Buy at $1.00 per GB" in page

    for bad in ("0", "-1", "1.5", "x"):
        r = await post_form(client, url, f"{url}/traffic", {"gb": bad, "rate_cents": "100"})
        assert r.status_code == 422 and "whole number of GB" in r.text
    stale = await post_form(
        client, url, f"{url}/traffic", {"gb": "2", "rate_cents": "50", "idempotency_key": "s"}
    )
    assert stale.status_code == 409 and "nothing was charged" in stale.text
    assert await wallet(platform, customer) == start

    data = {"gb": "2", "rate_cents": "100", "idempotency_key": "page-1-traffic"}
    done = await follow(client, await post_form(client, url, f"{url}/traffic", data))
    assert "2 GB added; $2.00 charged" in done.text and 'id="plan-bought">2 GB bought' in done.text
    again = await post_form(client, url, f"{url}/traffic", data)  # the same form sent twice: charged once
    assert again.status_code == 303
    assert await wallet(platform, customer) == start - 200
    assert (await quota_row(platform, sid)).extra_bytes == 2 * GB
    assert 'id="plan-left">12 GB<' in done.text and "of 12 GB used" in done.text

    form = {"enabled": "on", "threshold_pct": "0", "gb": "1", "max_per_period": "1"}
    r = await post_form(client, url, f"{url}/traffic/auto-top-up", form)
    assert r.status_code == 422 and "threshold_pct" in r.text
    done = await follow(
        client, await post_form(client, url, f"{url}/traffic/auto-top-up", {**form, "threshold_pct": "85"})
    )
    assert "Auto top-up on: 1 GB at 85 %" in done.text and "0 of 1 this period" in done.text
    assert (await quota_row(platform, sid)).auto_threshold_pct == 85
    done = await follow(client, await post_form(client, url, f"{url}/traffic/auto-top-up", {"gb": "1"}))
    assert "Auto top-up off." in done.text and (await quota_row(platform, sid)).auto_threshold_pct is None

    # used up: the page says the gateway refuses it
    async with platform.db.unit_of_work() as uow:
        await uow.session.execute(
            update(ServiceQuota).where(ServiceQuota.service_id == sid).values(used_bytes=12 * GB)
        )
        await uow.commit()
    page = (await client.get(url)).text
    assert 'id="quota-exhausted"' in page and "<code>quota_exhausted</code>" in page


async def customer_of(platform: Platform, sid: uuid.UUID) -> int:
    from tests.domains.quotas.support import service_of

    async with platform.db.unit_of_work(write=False) as uow:
        return (await service_of(uow.session, sid)).customer_id


async def test_client_ip_limit_form(client: httpx.AsyncClient, platform: Platform) -> None:
    url, key = await buy_rotating(client, platform)
    page = (await client.get(url)).text
    assert 'id="client-ips"' in page and "No limit: any number of client addresses" in page
    r = await post_form(client, url, f"{url}/client-ips", {"max_client_ips": "x", "policy": "refuse_new"})
    assert r.status_code == 422 and "whole number" in r.text
    r = await post_form(client, url, f"{url}/client-ips", {"max_client_ips": "5000", "policy": "refuse_new"})
    assert r.status_code == 422 and "max_client_ips" in r.text
    done = await follow(
        client,
        await post_form(client, url, f"{url}/client-ips", {"max_client_ips": "2", "policy": "newest_wins"}),
    )
    assert "At most 2 client addresses (newest wins)." in done.text
    assert "At most 2 client addresses within 10 minutes; a new one replaces" in done.text
    api = (await client.get(f"/api/v1/customer/services/{url.rsplit('/', 1)[1]}/proxy/client-ip-limit",
                            headers=bearer(key))).json()  # fmt: skip
    assert (api["max_client_ips"], api["policy"]) == (2, "newest_wins")
    done = await follow(client, await post_form(client, url, f"{url}/client-ips", {"max_client_ips": ""}))
    assert "No limit on client addresses." in done.text


async def test_speed_limit_form(client: httpx.AsyncClient, platform: Platform) -> None:
    url, key = await buy_rotating(client, platform)
    assert "No speed limit." in (await client.get(url)).text
    r = await post_form(client, url, f"{url}/speed-limit", {"kbps": "0"})
    assert r.status_code == 422 and "bytes_per_second" in r.text
    done = await follow(client, await post_form(client, url, f"{url}/speed-limit", {"kbps": "1000"}))
    assert "Speed limit: 1000 kB/s." in done.text and "Speed limit: 1 MB/s, all connections" in done.text
    sid = url.rsplit("/", 1)[1]
    api = await client.get(f"/api/v1/customer/services/{sid}/proxy/speed-limit", headers=bearer(key))
    assert api.json()["bytes_per_second"] == 1_000_000
    done = await follow(client, await post_form(client, url, f"{url}/speed-limit", {"kbps": ""}))
    assert "No speed limit." in done.text
