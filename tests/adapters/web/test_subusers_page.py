"""Dashboard sub-users section (issue 18): create one (its password shown once; its proxy URLs, in the
Copy buttons only, carry the real password: issue 30.9), its usage on the page in decimal units (30.11),
disable, a clear error in the section, delete; all through the real app and the sub-user operations."""

from __future__ import annotations

import html
from datetime import UTC, datetime

import httpx
import pytest
from sqlalchemy import select

from proxyplane.domains.subusers.metering import apply_usage
from proxyplane.platform import Platform
from proxyplane.storage.models import Customer
from proxyplane.storage.models.subusers import ServiceSubuser
from tests.adapters.web.helpers import follow, post_form, signup
from tests.domains.subusers.support import make_service
from tests.support import Account

pytestmark = pytest.mark.anyio
MB = 10**6  # decimal (core/units.py)


def copies(page: str) -> list[str]:
    return [html.unescape(c.split('"', 1)[0]) for c in page.split('data-copy="')[1:]]


async def test_create_copy_usage_disable_delete(client: httpx.AsyncClient, platform: Platform) -> None:
    email = await signup(client)
    async with platform.db.unit_of_work(write=False) as uow:
        customer_id = (
            await uow.session.execute(select(Customer.id).where(Customer.email == email))
        ).scalar_one()
    svc = await make_service(
        platform,
        Account(platform, customer_id, email, ""),
        parameters={"plan": "bandwidth"},
        max_connections=20,
    )
    url = f"/services/{svc.service_id}"
    page = await client.get(url)
    assert 'id="subusers"' in page.text and 'id="subuser-create"' in page.text

    refused = await post_form(client, url, f"{url}/subusers", {"login": "", "max_connections": "50"})
    assert refused.status_code == 422 and "above the service&#39;s 20" in refused.text

    made = await follow(
        client,
        await post_form(
            client,
            url,
            f"{url}/subusers",
            {"login": "scraper_1", "traffic_limit": "10", "traffic_unit": "MB"},
        ),
    )
    assert 'id="subuser-password"' in made.text
    async with platform.db.unit_of_work(write=False) as uow:
        sub = (
            await uow.session.execute(select(ServiceSubuser).where(ServiceSubuser.login == "scraper_1"))
        ).scalar_one()
        password = platform.secrets.decrypt(sub.password_enc)
    lines = copies(made.text)
    assert password in lines  # the password, once
    full = [c for c in lines if c.startswith("http://scraper_1:")]
    assert (
        full and full[0].startswith(f"http://scraper_1:{password}@") and full[0].rsplit(":", 1)[1].isdigit()
    )

    async with platform.db.unit_of_work() as uow:
        minute = datetime.now(UTC).replace(second=0, microsecond=0)
        row = {
            "subuser_pk": sub.id,
            "minute": minute,
            "host": "a.example",
            "requests": 7,
            "connections": 1,
            "bytes_up": MB,
            "bytes_down": 2 * MB,
            "errors": 0,
        }
        await apply_usage(uow.session, [row], [])
        await uow.commit()
    again = await client.get(url)
    visible = again.text.split('data-copy="', 1)[0] + "".join(
        part.split('"', 1)[1] for part in again.text.split('data-copy="')[1:]
    )
    assert password not in visible  # the password text is not shown again...
    assert "PASSWORD" not in again.text and "scraper_1:••••••••@" in again.text
    working = [c for c in copies(again.text) if c.startswith(("http://scraper_1:", "socks5h://scraper_1:"))]
    assert len(working) == 2 and all(f"scraper_1:{password}@" in c for c in working)  # ...only copied
    assert sub.traffic_limit_bytes == 10 * MB and ">10 MB<" in again.text  # the limit as typed
    assert "3 MB, 7 req." in again.text  # used against the limit
    assert "7 req., 3 MB" in again.text  # this window's usage of the sub-user

    action = f"{url}/subusers/{sub.subuser_id}"
    disabled = await follow(client, await post_form(client, url, action, {"do": "disable"}))
    assert "scraper_1 disabled" in disabled.text and ">disabled<" in disabled.text
    gone = await follow(client, await post_form(client, url, action, {"do": "delete"}))
    assert 'data-login="scraper_1"' not in gone.text
