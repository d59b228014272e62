"""View as the customer in a real browser (issue 33), desktop and phone (390 px, no sideways scroll):
support opens the customer's dashboard from the console's customer page, reads it with the read-only
banner, finds no way to change anything (a form sent anyway is refused), ends the view and is back in the
console; the audit log holds the view."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.adapters.admin.test_console_browser import base_url, browser, no_sideways_scroll  # noqa: F401
from tests.adapters.admin.test_lists_browser import on_platform, sign_in, support_and_customer
from tests.domains.operators.helpers import run


@pytest.mark.parametrize("width", [1280, 390])
def test_view_the_dashboard_as_the_customer(
    browser: Any,  # noqa: F811
    base_url: str,  # noqa: F811
    database_url: str,
    tmp_path: Path,
    width: int,
) -> None:
    email, once, customer = on_platform(database_url, tmp_path, support_and_customer)
    context = browser.new_context(viewport={"width": width, "height": 860})
    page = context.new_page()
    sign_in(page, base_url, email, once)
    page.goto(f"{base_url}/admin/customers/{customer.customer_id}")
    no_sideways_scroll(page)
    page.click("#view-as button")
    page.wait_for_url(f"{base_url}/overview")
    banner = page.inner_text("#view-as")
    assert "Read-only view" in banner and customer.email in banner and email in banner
    no_sideways_scroll(page)
    page.goto(f"{base_url}/keys")
    no_sideways_scroll(page)
    page.fill("input[name=name]", "made in the view")
    page.locator("form[action='/keys'] button").first.click()
    page.wait_for_load_state()
    assert "read-only view" in page.inner_text("main")
    page.goto(f"{base_url}/keys")
    assert "made in the view" not in page.inner_text("main")
    page.click("#end-view")
    page.wait_for_url(f"{base_url}/admin/customers")
    no_sideways_scroll(page)
    context.close()

    async def audit(platform: Any) -> list[dict[str, Any]]:  # support may not read the audit log itself
        found = await run(platform, "operator_audit_list", actor=email, action="operator_customer_view_as")
        return list(found["entries"])

    (entry,) = on_platform(database_url, tmp_path, audit)
    assert entry["target"] == f"customer:{customer.customer_id}" and entry["door"] == "console"
