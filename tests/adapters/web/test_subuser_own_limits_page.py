"""The dashboard's sub-user form sets a sub-user's own max_client_ips and speed limit (issue 32.5/32.6,
kB/s on the page), through the real app and the create_subuser operation; 0 kB/s is refused naming it."""

from __future__ import annotations

import secrets

import httpx
import pytest
from sqlalchemy import select

from proxyplane.platform import Platform
from proxyplane.storage.models import Customer
from proxyplane.storage.models.subusers import ServiceSubuser
from tests.adapters.web.helpers import post_form, signup
from tests.domains.subusers.support import make_service
from tests.support import Account

pytestmark = pytest.mark.anyio


async def test_subuser_form_sets_its_own_limits(client: httpx.AsyncClient, platform: Platform) -> None:
    email = await signup(client)
    async with platform.db.unit_of_work(write=False) as uow:
        customer_id = (
            await uow.session.execute(select(Customer.id).where(Customer.email == email))
        ).scalar_one()
    svc = await make_service(platform, Account(platform, customer_id, email, ""), max_connections=20)
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
    async with platform.db.unit_of_work(write=False) as uow:
        sub = (
            await uow.session.execute(select(ServiceSubuser).where(ServiceSubuser.login == login))
        ).scalar_one()
    assert (sub.max_client_ips, sub.speed_limit_bps) == (2, 500_000)
