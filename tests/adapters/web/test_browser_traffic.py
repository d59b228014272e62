"""Issue 32 in a real browser, at desktop width and on a 390 px phone: a monthly 10 GB plan's page shows
its period and when it resets; the add-traffic form buys 2 GB at the rate shown (the limit becomes 12 GB,
the wallet pays $2.00), the auto top-up form turns it on and the client-address limit is set (issue
32.5); the page never scrolls sideways."""

from __future__ import annotations

from typing import Any

import pytest

from tests.adapters.web.test_browser import base_url, browser, sign_up  # noqa: F401  (fixtures)
from tests.adapters.web.test_browser_customer_pages import WIDTHS, too_wide
from tests.adapters.web.test_browser_rotating import run, seed


@pytest.mark.parametrize("width", list(WIDTHS))
def test_add_traffic_form(
    browser: Any,  # noqa: F811
    base_url: str,  # noqa: F811
    database_url: str,
    tmp_path: Any,
    width: str,
) -> None:
    run(database_url, seed, tmp_path)
    mobile = width == "phone"
    context = browser.new_context(viewport=WIDTHS[width], is_mobile=mobile, has_touch=mobile)
    page = context.new_page()
    sign_up(page, base_url)
    page.goto(f"{base_url}/wallet")
    page.fill("input[name=amount]", "10")
    page.click("button:has-text('Continue to payment')")
    page.click("button:has-text('Pay')")
    page.goto(f"{base_url}/catalog")
    page.click("section.product:has-text('Rotating datacenter: 10 GB') button:has-text('Buy for')")
    page.wait_for_url(f"{base_url}/services/*")
    assert page.inner_text("#plan") == "10 GB a month"
    assert "Plan use this month" in page.inner_text("#plan-use") and "resets" in page.inner_text(
        "#plan-period"
    )
    assert page.inner_text("#plan-left") == "10 GB"
    assert page.evaluate("document.documentElement.scrollWidth") <= WIDTHS[width]["width"], too_wide(page)

    page.fill("#add-traffic input[name=gb]", "2")
    page.click("#add-traffic button")
    page.wait_for_selector("#plan-bought")
    assert "2 GB added; $2.00 charged" in page.inner_text("main")
    assert page.inner_text("#plan-left") == "12 GB" and page.inner_text("#plan-bought") == "2 GB bought"

    page.check("#auto-topup input[name=enabled]")
    page.fill("#auto-topup input[name=threshold_pct]", "80")
    page.click("#auto-topup button")
    page.wait_for_selector("#auto-topup-state:has-text('Auto top-up on')")
    assert "0 of 1 this period" in page.inner_text("#auto-topup-state")
    assert page.evaluate("document.documentElement.scrollWidth") <= WIDTHS[width]["width"], too_wide(page)
    box = page.locator("#add-traffic button").bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= WIDTHS[width]["width"]
    page.fill("#client-ips input[name=max_client_ips]", "3")
    page.select_option("#client-ips select[name=policy]", "newest_wins")
    page.click("#client-ips button")
    page.wait_for_selector("#client-ips-state:has-text('At most 3 client addresses')")
    assert page.evaluate("document.documentElement.scrollWidth") <= WIDTHS[width]["width"], too_wide(page)
    page.goto(f"{base_url}/invoices")
    assert "Traffic: 2 GB for service" in page.inner_text("main")
    context.close()
