"""Issue 32.5/32.6 in a real browser, at 1280 px and on a 390 px phone: a sub-user made on the service page
gets its own client-address limit, policy and speed limit from its row's "Limits" form afterwards (the
update_subuser operation), sees them in its row, and clears them again; the page never scrolls sideways."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.adapters.web.test_browser import base_url, browser, sign_up  # noqa: F401  (fixtures)
from tests.adapters.web.test_browser_customer_pages import WIDTHS, too_wide
from tests.adapters.web.test_subusers_browser import in_store


def _service_of(email: str) -> Any:
    async def work(platform: Any) -> str:
        from sqlalchemy import select

        from proxyplane.storage.models import Customer
        from tests.domains.subusers.support import make_service
        from tests.support import Account

        async with platform.db.unit_of_work(write=False) as uow:
            cid = (await uow.session.execute(select(Customer.id).where(Customer.email == email))).scalar_one()
        svc = await make_service(platform, Account(platform, cid, email, ""), max_connections=20)
        return str(svc.service_id)

    return work


def _limits_of(login: str) -> Any:
    async def work(platform: Any) -> tuple[Any, ...]:
        from sqlalchemy import select

        from proxyplane.storage.models.subusers import ServiceSubuser

        async with platform.db.unit_of_work(write=False) as uow:
            sub = (
                await uow.session.execute(select(ServiceSubuser).where(ServiceSubuser.login == login))
            ).scalar_one()
        return (sub.max_client_ips, sub.client_ip_policy, sub.speed_limit_bps)

    return work


@pytest.mark.parametrize("width", list(WIDTHS))
def test_edit_a_subusers_limits(
    browser: Any,  # noqa: F811
    base_url: str,  # noqa: F811
    database_url: str,
    tmp_path: Path,
    width: str,
) -> None:
    mobile = width == "phone"
    context = browser.new_context(viewport=WIDTHS[width], is_mobile=mobile, has_touch=mobile)
    page = context.new_page()
    try:
        email = sign_up(page, base_url)
        sid = in_store(database_url, tmp_path, _service_of(email))
        login = f"lim_{width}_{sid[:8]}"
        page.goto(f"{base_url}/services/{sid}#subusers")
        page.fill("#subuser-create input[name=login]", login)
        page.click("#subuser-create button")
        page.wait_for_selector("#subuser-password")
        row = page.locator(f"tr.subuser[data-login={login}]")
        assert row.locator(".subuser-ips").count() == 0 and row.locator(".subuser-speed").count() == 0

        row.locator("details.limits summary").click()
        row.locator("input[name=max_client_ips]").fill("2")
        row.locator("select[name=client_ip_policy]").select_option("newest_wins")
        row.locator("input[name=speed_kbps]").fill("1000")
        assert page.evaluate("document.documentElement.scrollWidth") <= WIDTHS[width]["width"], too_wide(page)
        box = row.locator("button:has-text('Save limits')").bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= WIDTHS[width]["width"]
        row.locator("button:has-text('Save limits')").click()
        page.wait_for_selector(f"text=Limits of sub-user {login} saved.")
        row = page.locator(f"tr.subuser[data-login={login}]")
        assert row.locator(".subuser-ips").inner_text() == ", 2 client addresses (newest wins)"
        assert row.locator(".subuser-speed").inner_text() == ", 1 MB/s"
        assert in_store(database_url, tmp_path, _limits_of(login)) == (2, "newest_wins", 1_000_000)
        assert page.evaluate("document.documentElement.scrollWidth") <= WIDTHS[width]["width"], too_wide(page)

        row.locator("details.limits summary").click()
        assert row.locator("input[name=speed_kbps]").input_value() == "1000"  # the form shows what is set
        row.locator("input[name=max_client_ips]").fill("")
        row.locator("input[name=speed_kbps]").fill("")
        row.locator("button:has-text('Save limits')").click()
        page.wait_for_selector(f"text=Limits of sub-user {login} saved.")
        assert page.locator(f"tr.subuser[data-login={login}] .subuser-ips").count() == 0
        assert in_store(database_url, tmp_path, _limits_of(login)) == (None, "newest_wins", None)
    finally:
        context.close()
