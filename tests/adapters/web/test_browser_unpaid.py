"""Issue 22.1 in a real browser: an order bigger than the wallet is paid partly from it and waits for the
rest; the overview, the wallet and the service page show the exact amount due with a "pay now" link and
when the reserved IPs and the wallet part return; the service page hides its endpoints until the order
is paid; paying through that link makes the service active with its endpoints shown."""

from __future__ import annotations

import asyncio
import re
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.adapters.web.test_browser import base_url, browser, shots, sign_up  # noqa: F401  (fixtures)

COUNTRY = "CL"
IPS = 60


@pytest.fixture(scope="module")
def stock(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    from proxyplane.core.settings import Settings
    from proxyplane.platform import Platform
    from tests.domains.stock.support import fresh_stock

    async def seed() -> None:
        platform = Platform(Settings(home=tmp_path_factory.mktemp("seed"), database_url=database_url))
        try:
            await fresh_stock(platform, "proxy_datacenter", COUNTRY, IPS)
        finally:
            await platform.close()

    seeding = threading.Thread(target=lambda: asyncio.run(seed()))
    seeding.start()
    seeding.join()


def cents(text: str) -> int:
    found = re.search(r"\$([\d,]+)\.(\d\d)", text)
    assert found, text
    return int(found.group(1).replace(",", "")) * 100 + int(found.group(2))


def test_partial_order_amount_due_pay_now_active(
    browser: Any,  # noqa: F811
    base_url: str,  # noqa: F811
    shots: Path,  # noqa: F811
    stock: None,
) -> None:
    page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
    sign_up(page, base_url)
    page.goto(f"{base_url}/wallet")
    page.fill("input[name=amount]", "5")
    page.click("button:has-text('Continue to payment')")
    page.click("button:has-text('Pay')")
    page.goto(f"{base_url}/buy")
    page.fill(f"input[name=n_{COUNTRY}]", str(IPS))
    page.wait_for_selector("#quote-total")
    total = cents(page.inner_text("#quote-total"))
    assert total > 500, "the order must cost more than the wallet holds"
    page.fill("input[name=whitelist]", "127.0.0.1")
    page.check("input[name=use_balance]")
    page.click("button:has-text('Buy now')")
    page.wait_for_url(re.compile(r".*/checkout/test/.*"))  # the customer closes the checkout instead

    due = total - 500
    for where in ("/overview", "/wallet"):
        page.goto(f"{base_url}{where}")
        box = page.inner_text("#unpaid")
        assert cents(page.inner_text("#unpaid .amount-due")) == due, box
        assert "$5.00 taken from your wallet is refunded" in box and "reserved until" in box
    page.click("#unpaid a:has-text('Order #')")
    page.wait_for_url(re.compile(r".*/services/[0-9a-f-]+$"))
    service_url = page.url
    assert cents(page.inner_text("#unpaid .amount-due")) == due
    assert page.locator("#endpoints").count() == 0 and page.locator("#endpoints-hidden").count() == 1
    page.screenshot(path=str(shots / "unpaid-order.png"), full_page=True)

    page.click("#unpaid a.pay-now")
    page.wait_for_url(re.compile(r".*/checkout/test/.*"))
    assert cents(page.inner_text("strong")) == due
    page.click("button:has-text('Pay')")
    page.wait_for_selector("text=Payment paid")
    page.goto(service_url)
    assert page.inner_text("h1 .badge") == "active"
    assert page.locator("#unpaid").count() == 0
    assert page.locator("#endpoints tbody tr").count() == IPS
    page.goto(f"{base_url}/overview")
    assert page.locator("#unpaid").count() == 0
    page.context.close()
