"""The console in a real browser (issue 33), desktop and phone (390 px, no sideways scroll): a new
operator signs in with the one-time password, enrols TOTP from the page, finds a customer, credits the
wallet, and reads the credit in the audit trail."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pyotp
import pytest

from proxyplane.core.settings import Settings
from proxyplane.platform import Platform
from proxyplane.storage.engine import Database
from tests.adapters.web.browser import CHROMIUM, CHROMIUM_ARGS, serve
from tests.domains.operators.helpers import make_operator
from tests.support import Account, make_account

if not Path(CHROMIUM).exists():
    pytest.skip(f"{CHROMIUM} is missing", allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api")


@pytest.fixture(scope="module")
def base_url(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with serve(database_url, tmp_path_factory.mktemp("home")) as url:
        yield url


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


def setup(database_url: str, home: Path) -> tuple[str, str, Account]:
    async def go() -> tuple[str, str, Account]:
        settings = Settings(home=home, database_url=database_url, secret_key="test-secret-key")
        platform = Platform(settings, Database(settings.resolved_database_url()))
        try:
            email, once, _ = await make_operator(platform, "owner")
            return email, once, await make_account(platform)
        finally:
            await platform.close()

    with ThreadPoolExecutor(1) as pool:  # Playwright's sync API runs a loop in this thread
        return pool.submit(asyncio.run, go()).result()


def no_sideways_scroll(page: Any) -> None:
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1"), page.url


@pytest.mark.parametrize("width", [1280, 390])
def test_sign_in_with_totp_find_credit_and_read_the_audit(
    browser: Any, base_url: str, database_url: str, tmp_path: Path, width: int
) -> None:
    email, once, customer = setup(database_url, tmp_path)
    context = browser.new_context(viewport={"width": width, "height": 860})
    page = context.new_page()
    page.goto(f"{base_url}/admin")
    page.wait_for_url(f"{base_url}/admin/login")
    no_sideways_scroll(page)
    page.fill("input[name=email]", email)
    page.fill("input[name=password]", once)
    page.click("button:has-text('Continue')")
    page.wait_for_url(f"{base_url}/admin/enrol")
    assert page.locator(".qr svg").count() == 1
    no_sideways_scroll(page)
    secret = page.inner_text("#totp-secret").strip()
    page.fill("input[name=code]", pyotp.TOTP(secret).now())
    page.fill("input[name=new_password]", "browser-console-password")
    page.click("button:has-text('Turn on and continue')")
    assert page.locator("#recovery-codes li").count() == 10
    no_sideways_scroll(page)
    page.click("a:has-text('Continue to the console')")
    page.wait_for_url(f"{base_url}/admin")
    assert page.inner_text("#rev-today").startswith("$")
    no_sideways_scroll(page)

    page.goto(f"{base_url}/admin/customers")
    page.fill("input[name=q]", customer.email)
    page.click("button:has-text('Search')")
    page.click(f"a:has-text('{customer.email}')")
    page.wait_for_url(f"{base_url}/admin/customers/{customer.customer_id}")
    no_sideways_scroll(page)
    page.fill("input[name=amount]", "7.25")
    page.fill("input[name=reason]", "browser goodwill")
    page.click("button:has-text('Apply')")
    page.wait_for_url(f"{base_url}/admin/customers/{customer.customer_id}?done=credit")
    assert page.inner_text("#balance") == "$7.25"
    no_sideways_scroll(page)

    page.goto(f"{base_url}/admin/audit?actor={email}&action=operator_wallet_credit")
    entries = page.locator("#audit-entries li")
    assert entries.count() == 1
    text = entries.first.inner_text()
    assert f"customer:{customer.customer_id}" in text and "725" in text and "console" in text
    no_sideways_scroll(page)
    context.close()
