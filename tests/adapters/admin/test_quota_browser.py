"""The console's service quota page in a real browser (issue 32), at 1280 px and on a 390 px phone (no
sideways scroll): an admin follows a customer's rotating service to its traffic quota, raises it and makes
it monthly, and reads the new limit and its reset date; the catalog page's traffic fields fit too."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from proxyplane.platform import Platform
from tests.adapters.admin.test_console_browser import base_url, browser, no_sideways_scroll  # noqa: F401
from tests.adapters.admin.test_lists_browser import on_platform, sign_in
from tests.domains.operators.helpers import make_operator

GB = 10**9


async def admin_and_metered(platform: Platform) -> tuple[str, str, int, int, str]:
    from tests.domains.operators.helpers import run
    from tests.domains.quotas.support import flush, metered_service
    from tests.support import make_account

    email, once, _ = await make_operator(platform, "admin")
    account = await make_account(platform)
    svc = await metered_service(platform, account, 4 * GB, period="term", gb_price_cents=250)
    await flush(platform, svc.service_id, 3 * GB)
    await run(  # a rotating product off sale: the catalog page shows its traffic fields
        platform,
        "operator_product_add",
        name=f"Browser metered {uuid.uuid4().hex[:8]}",
        kind="proxy_rotating",
        price_cents=500,
        config={"plan": "bandwidth", "quota_bytes": 10 * GB, "quota_period": "month", "gb_price_cents": 100},
    )
    return email, once, account.customer_id, svc.number, str(svc.service_id)


@pytest.mark.parametrize("width", [1280, 390])
def test_raise_a_services_quota_in_the_console(
    browser: Any,  # noqa: F811
    base_url: str,  # noqa: F811
    database_url: str,
    tmp_path: Path,
    width: int,
) -> None:
    email, once, customer_id, number, sid = on_platform(database_url, tmp_path, admin_and_metered)
    context = browser.new_context(viewport={"width": width, "height": 860})
    try:
        page = context.new_page()
        sign_in(page, base_url, email, once)
        page.goto(f"{base_url}/admin/customers/{customer_id}")
        page.click(f"#quota-{number}")
        page.wait_for_url(f"{base_url}/admin/quotas/{sid}")
        assert page.inner_text("#quota-state").startswith("3 of 4 GB used · period term")
        no_sideways_scroll(page)
        page.fill("#quota-form input[name=quota_gb]", "12.5")
        page.select_option("#quota-form select[name=quota_period]", "month")
        page.click("#quota-form button")
        page.wait_for_url(f"{base_url}/admin/quotas/{sid}?done=quota+saved")
        state = page.inner_text("#quota-state")
        assert state.startswith("3 of 12.5 GB used · period month, resets ") and "250 ¢ per GB added" in state
        no_sideways_scroll(page)
        page.goto(f"{base_url}/admin/catalog")
        assert page.locator("#products input[name=quota_gb]").count() >= 1
        no_sideways_scroll(page)
    finally:
        context.close()
