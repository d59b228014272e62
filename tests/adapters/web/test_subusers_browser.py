"""The issue's dashboard check in a real browser: create a sub-user on the service page, copy its proxy line
(login, the password shown once, the gateway endpoint) from the clipboard, and see its usage on the page once
the gateway has metered some (written here with the gateway's metering call)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from tests.adapters.web.test_browser import base_url, browser, sign_up  # noqa: F401  (fixtures)

T = TypeVar("T")
MB = 10**6  # decimal (core/units.py)


def in_store(database_url: str, home: Path, work: Callable[[Any], Awaitable[T]]) -> T:
    """Run `work(platform)` against the served app's database (own event loop, in a thread)."""
    from proxyplane.core.settings import Settings
    from proxyplane.platform import Platform
    from proxyplane.storage.engine import Database

    async def run() -> T:
        settings = Settings(home=home, database_url=database_url, secret_key="test-secret-key")
        platform = Platform(settings, Database(settings.resolved_database_url()))
        try:
            return await work(platform)
        finally:
            await platform.db.dispose()

    out: list[T] = []
    thread = threading.Thread(target=lambda: out.append(asyncio.run(run())))
    thread.start()
    thread.join()
    return out[0]


def test_create_copy_and_see_usage(
    database_url: str,
    browser: Any,  # noqa: F811
    base_url: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    from sqlalchemy import select

    from proxyplane.domains.subusers.metering import apply_usage
    from proxyplane.storage.models import Customer
    from proxyplane.storage.models.subusers import ServiceSubuser
    from tests.domains.subusers.support import make_service
    from tests.support import Account

    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=base_url)
    page = context.new_page()
    email = sign_up(page, base_url)

    async def service(platform: Any) -> str:
        async with platform.db.unit_of_work(write=False) as uow:
            cid = (await uow.session.execute(select(Customer.id).where(Customer.email == email))).scalar_one()
        svc = await make_service(
            platform, Account(platform, cid, email, ""), parameters={"plan": "bandwidth"}
        )
        return str(svc.service_id)

    sid = in_store(database_url, tmp_path, service)
    page.goto(f"{base_url}/services/{sid}#subusers")
    page.fill("#subuser-create input[name=login]", "browser_job")
    page.fill("#subuser-create input[name=traffic_limit]", "100")
    page.select_option("#subuser-create select[name=traffic_unit]", "MB")
    page.click("#subuser-create button")
    page.wait_for_selector("#subuser-password")
    page.click("#subuser-password button:has-text('Copy proxy line')")
    line = page.evaluate("navigator.clipboard.readText()")

    async def stored(platform: Any) -> tuple[int, str]:
        async with platform.db.unit_of_work() as uow:
            sub = (
                await uow.session.execute(select(ServiceSubuser).where(ServiceSubuser.login == "browser_job"))
            ).scalar_one()
            minute = datetime.now(UTC).replace(second=0, microsecond=0)
            row = {
                "subuser_pk": sub.id,
                "minute": minute,
                "host": "origin.example",
                "requests": 4,
                "connections": 1,
                "bytes_up": MB,
                "bytes_down": MB,
                "errors": 0,
            }
            await apply_usage(uow.session, [row], [])
            await uow.commit()
            return sub.id, platform.secrets.decrypt(sub.password_enc)

    _pk, password = in_store(database_url, tmp_path, stored)
    assert line.startswith(f"http://browser_job:{password}@") and line.rsplit(":", 1)[1].isdigit()

    page.reload()  # the same URL: a fragment-only goto would not load the page again
    assert page.query_selector("#subuser-password") is None  # the password was shown once
    row = page.inner_text("tr.subuser[data-login=browser_job]")
    assert "2 MB, 4 req." in row and "100 MB" in row and "active" in row
    context.close()
