"""The dashboard's sub-user form sets a sub-user's own max_client_ips and speed limit (issue 32.5/32.6,
kB/s on the page), through the real app and the create_subuser operation; 0 kB/s is refused naming it.
Each sub-user's row edits them afterwards (update_subuser, the operation REST and MCP use): set, shown,
cleared; out of range is a 422 naming the field and changes nothing."""

from __future__ import annotations

import secrets
from typing import Any

import httpx
import pytest
from sqlalchemy import select

from proxyplane.platform import Platform
from proxyplane.storage.models import Customer
from proxyplane.storage.models.subusers import ServiceSubuser
from tests.adapters.web.helpers import follow, post_form, signup
from tests.domains.subusers.support import make_service
from tests.support import Account

pytestmark = pytest.mark.anyio


async def _service(client: httpx.AsyncClient, platform: Platform) -> Any:
    email = await signup(client)
    async with platform.db.unit_of_work(write=False) as uow:
        customer_id = (
            await uow.session.execute(select(Customer.id).where(Customer.email == email))
        ).scalar_one()
    return await make_service(platform, Account(platform, customer_id, email, ""), max_connections=20)


async def _stored(platform: Platform, login: str) -> ServiceSubuser:
    async with platform.db.unit_of_work(write=False) as uow:
        return (
            await uow.session.execute(select(ServiceSubuser).where(ServiceSubuser.login == login))
        ).scalar_one()


async def test_subuser_form_sets_its_own_limits(client: httpx.AsyncClient, platform: Platform) -> None:
    svc = await _service(client, platform)
    url = f"/services/{svc.service_id}"
    page = (await client.get(url)).text
    assert 'name="max_client_ips"' in page and 'name="speed_kbps"' in page
    refused = await post_form(client, url, f"{url}/subusers", {"speed_kbps": "0"})
    assert refused.status_code == 422 and "speed_limit_bps" in refused.text
    login = f"lim_{secrets.token_hex(4)}"
    made = await post_form(
        client, url, f"{url}/subusers", {"login": login, "max_client_ips": "2", "speed_kbps": "500"}
    )
    assert made.status_code in (200, 303), made.text
    sub = await _stored(platform, login)
    assert (sub.max_client_ips, sub.speed_limit_bps) == (2, 500_000)


async def test_subuser_row_edits_its_own_limits(client: httpx.AsyncClient, platform: Platform) -> None:
    svc = await _service(client, platform)
    url = f"/services/{svc.service_id}"
    login = f"edit_{secrets.token_hex(4)}"
    made = await post_form(client, url, f"{url}/subusers", {"login": login})
    assert made.status_code == 303, made.text
    sub = await _stored(platform, login)
    assert (sub.max_client_ips, sub.speed_limit_bps) == (None, None)
    row = f"{url}/subusers/{sub.subuser_id}"
    limits = {"do": "limits", "max_client_ips": "3", "client_ip_policy": "newest_wins", "speed_kbps": "750"}
    page = await follow(client, await post_form(client, url, row, limits))
    assert f"Limits of sub-user {login} saved." in page.text
    assert "3 client addresses (newest wins)" in page.text and "750 kB/s" in page.text
    assert 'value="750"' in page.text and 'value="3"' in page.text  # the row's form shows what is set
    sub = await _stored(platform, login)
    assert (sub.max_client_ips, sub.client_ip_policy, sub.speed_limit_bps) == (3, "newest_wins", 750_000)

    for field, value, named in (
        ("max_client_ips", "1001", "max_client_ips"),
        ("max_client_ips", "0", "max_client_ips"),
        ("speed_kbps", "0", "speed_limit_bps"),
        ("client_ip_policy", "oldest_wins", "client_ip_policy"),
    ):
        refused = await post_form(client, url, row, {**limits, field: value})
        assert refused.status_code == 422 and named in refused.text, (field, value, refused.text)
    refused = await post_form(client, url, row, {**limits, "speed_kbps": "fast"})
    assert refused.status_code == 422 and "speed limit: enter a whole number" in refused.text
    sub = await _stored(platform, login)
    assert (sub.max_client_ips, sub.client_ip_policy, sub.speed_limit_bps) == (3, "newest_wins", 750_000)

    cleared = await post_form(client, url, row, {"do": "limits", "max_client_ips": "", "speed_kbps": ""})
    assert cleared.status_code == 303, cleared.text
    sub = await _stored(platform, login)
    assert (sub.max_client_ips, sub.client_ip_policy, sub.speed_limit_bps) == (None, "refuse_new", None)
