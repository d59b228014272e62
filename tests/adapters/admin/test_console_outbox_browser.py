"""Issue 34: the console's email outbox in a real browser at 1280 and 390 px (no sideways scroll): a
dashboard sign-up's verification email waits in the outbox (no SMTP configured) and an owner operator
finds it by recipient and reads its link."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyotp
import pytest

from tests.adapters.admin.test_console_browser import base_url, browser, no_sideways_scroll  # noqa: F401
from tests.adapters.admin.test_console_browser import setup as operator_and_customer
from tests.adapters.web.test_browser import sign_up


@pytest.mark.parametrize("width", [1280, 390])
def test_operator_reads_a_waiting_verification_link(
    browser: Any,  # noqa: F811
    base_url: str,  # noqa: F811
    database_url: str,
    tmp_path: Path,
    width: int,
) -> None:
    email, once, _ = operator_and_customer(database_url, tmp_path)
    dashboard = browser.new_context(viewport={"width": 1280, "height": 860})
    customer = sign_up(dashboard.new_page(), base_url, verify=False)
    dashboard.close()

    context = browser.new_context(viewport={"width": width, "height": 860})
    page = context.new_page()
    page.goto(f"{base_url}/admin/login")
    page.fill("input[name=email]", email)
    page.fill("input[name=password]", once)
    page.click("button:has-text('Continue')")
    page.wait_for_url(f"{base_url}/admin/enrol")
    page.fill("input[name=code]", pyotp.TOTP(page.inner_text("#totp-secret").strip()).now())
    page.fill("input[name=new_password]", "browser-console-password")
    page.click("button:has-text('Turn on and continue')")
    page.click("a:has-text('Continue to the console')")
    page.wait_for_url(f"{base_url}/admin")

    page.goto(f"{base_url}/admin/outbox")
    page.fill("input[name=to]", customer)
    page.click("button:has-text('Filter')")
    rows = page.locator("#outbox tbody tr")
    assert rows.count() == 1 and "verify_email" in rows.first.inner_text()
    assert "pending" in rows.first.inner_text()
    no_sideways_scroll(page)
    rows.first.locator("a").click()
    page.wait_for_selector("#text")
    assert "/verify-email/" in page.inner_text("#text") and customer in page.inner_text("main")
    no_sideways_scroll(page)
    context.close()
