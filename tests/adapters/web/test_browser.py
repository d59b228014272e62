"""Real-browser tests: Playwright driving Debian's Chromium against the app served by uvicorn.

Screenshots go to $PROXYPLANE_SCREENSHOTS (docs/screenshots/ when refreshing the repo's copies), else to
the test's temporary directory."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.adapters.web.browser import CHROMIUM, CHROMIUM_ARGS, outbox_link, serve
from tests.support import unique_email

if not Path(CHROMIUM).exists():
    pytest.skip(f"{CHROMIUM} is missing (scripts/test.sh installs it as root)", allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api")
PASSWORD = "browser password 1"


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


@pytest.fixture
def shots(tmp_path: Path) -> Path:
    target = Path(os.environ.get("PROXYPLANE_SCREENSHOTS", "") or tmp_path)
    target.mkdir(parents=True, exist_ok=True)
    return target


def sign_up(page: Any, base_url: str, verify: bool = True) -> str:
    email = unique_email()
    page.goto(f"{base_url}/signup")
    page.fill("input[name=email]", email)
    page.fill("input[name=name]", "Grace Hopper")
    page.fill("input[name=password]", PASSWORD)
    page.fill("input[name=password2]", PASSWORD)
    page.click("button:has-text('Create account')")
    page.wait_for_url(f"{base_url}/overview")
    if verify:  # issue 34: open the emailed link (read from the outbox: no SMTP here), as buying needs it
        page.goto(outbox_link(base_url, email, "verify_email", "/verify-email/"))
        page.wait_for_url(f"{base_url}/overview")
    return email


DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}


def signed_in_page(
    browser: Any, base_url: str, phone: bool = False, verify: bool = True
) -> tuple[Any, Any, str]:
    """(context, page, email): a new customer signed up (address confirmed) in a browser context of its own
    (own cookies) at desktop size or as a 390 px phone; close the context when done."""
    context = new_context(browser, phone)
    page = context.new_page()
    page.on("dialog", lambda dialog: dialog.accept())  # the dashboard's confirm() prompts
    return context, page, sign_up(page, base_url, verify)


def new_context(browser: Any, phone: bool = False) -> Any:
    if phone:
        return browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True)
    return browser.new_context(viewport=DESKTOP)


def test_sign_up_top_up_and_see_balance(browser: Any, base_url: str, shots: Path) -> None:
    context = browser.new_context(viewport={"width": 1280, "height": 860})
    page = context.new_page()
    page.goto(f"{base_url}/login")
    page.screenshot(path=str(shots / "login.png"), full_page=True)
    sign_up(page, base_url, verify=False)  # topping up needs no confirmed address
    assert "Welcome!" in page.inner_text(".flash")
    assert page.inner_text("#balance") == "$0.00"
    page.click("nav.mainnav >> text=Wallet")
    page.fill("input[name=amount]", "40")
    page.check("input[value=card]")
    page.click("button:has-text('Continue to payment')")
    page.wait_for_url(re.compile(r".*/checkout/test/.*"))
    page.screenshot(path=str(shots / "checkout.png"), full_page=True)
    page.click("button:has-text('Pay')")
    page.wait_for_selector("text=Payment paid")
    page.click("text=Back to your wallet")
    page.wait_for_url(f"{base_url}/wallet")
    assert page.inner_text("#balance") == "$40.00"
    assert "deposit" in page.inner_text("table")
    page.screenshot(path=str(shots / "wallet.png"), full_page=True)
    page.click("nav.mainnav >> text=Overview")
    assert page.inner_text("#balance") == "$40.00"
    page.screenshot(path=str(shots / "overview.png"), full_page=True)
    context.close()


def test_api_key_secret_shown_once_and_copied(browser: Any, base_url: str, shots: Path) -> None:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=base_url)
    page = context.new_page()
    sign_up(page, base_url)
    page.click("nav.mainnav >> text=API keys")
    page.fill("input[name=name]", "scraper")
    page.check("input[value='services:read']")
    page.check("input[value='usage:read']")
    page.click("button:has-text('Create key')")
    secret = page.inner_text("#secret")
    assert secret.startswith("ppk_")
    page.click("#new-key button.copy")
    page.wait_for_selector("#new-key button.copy.done")
    assert page.evaluate("navigator.clipboard.readText()") == secret
    page.screenshot(path=str(shots / "api-keys.png"), full_page=True)
    page.goto(f"{base_url}/keys")
    assert secret not in page.content()
    page.once("dialog", lambda dialog: dialog.accept())
    page.click("button:has-text('Revoke')")
    page.wait_for_selector("text=revoked")
    assert "No active keys." in page.content()
    context.close()


def test_phone_width_and_security_pages(browser: Any, base_url: str, shots: Path) -> None:
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True)
    page = context.new_page()
    sign_up(page, base_url)
    page.goto(f"{base_url}/security")
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")
    page.screenshot(path=str(shots / "security-phone.png"), full_page=True)
    page.click("label.navbutton")
    page.click("nav.mainnav >> text=Profile")
    page.fill("input[name=phone]", "+1 555 0100")
    page.click("button:has-text('Save')")
    page.wait_for_selector("text=Profile saved.")
    page.screenshot(path=str(shots / "profile-phone.png"), full_page=True)
    context.close()


def test_buy_with_live_quote_then_copy_endpoint_and_cancel(
    browser: Any, base_url: str, shots: Path, database_url: str, tmp_path: Path
) -> None:
    import asyncio

    from proxyplane.core.settings import Settings
    from proxyplane.platform import Platform
    from tests.domains.stock.support import fresh_stock

    async def stock() -> None:
        platform = Platform(Settings(home=tmp_path, database_url=database_url, secret_key="k"))
        await fresh_stock(platform, "proxy_datacenter", "SK", 12)
        await platform.close()

    import threading

    seeding = threading.Thread(target=asyncio.run, args=(stock(),))  # Playwright owns this thread's loop
    seeding.start()
    seeding.join()
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=base_url)
    page = context.new_page()
    sign_up(page, base_url)
    page.goto(f"{base_url}/wallet")
    page.fill("input[name=amount]", "100")
    page.click("button:has-text('Continue to payment')")
    page.click("button:has-text('Pay')")
    page.click("text=Back to your wallet")
    page.click("nav.mainnav >> text=Buy")
    page.fill("input[name=n_SK]", "10")  # the script fetches the quote panel as the count changes
    page.wait_for_selector("#quote-total")
    first = page.inner_text("#quote-total")
    page.select_option("select[name=period_months]", "3")
    for _ in range(100):  # polled from Python: the page's CSP forbids evaluated strings
        if page.inner_text("#quote-total") != first:
            break
        page.wait_for_timeout(100)
    assert "3 months" in page.inner_text("#quote-total")
    page.screenshot(path=str(shots / "buy.png"), full_page=True)
    page.fill("input[name=whitelist]", "127.0.0.1")
    page.click("button:has-text('Buy now')")
    page.wait_for_url(re.compile(r".*/services/[0-9a-f-]+$"))
    assert "your proxies are ready" in page.inner_text(".flash")
    endpoint = page.inner_text("#endpoints tbody tr td code")
    page.click("#endpoints tbody tr button.copy")
    assert page.evaluate("navigator.clipboard.readText()") == endpoint
    page.screenshot(path=str(shots / "service.png"), full_page=True)
    page.click("text=Cancel service…")
    page.screenshot(path=str(shots / "cancel.png"), full_page=True)
    page.click("button:has-text('Yes, cancel and refund')")
    page.wait_for_selector("text=refunded to your wallet")
    page.goto(f"{base_url}/wallet")
    assert "refund" in page.inner_text("table")
    context.close()
