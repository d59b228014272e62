"""A reseller's console pages in a real browser (issue 33.4), desktop and phone (390 px, no sideways
scroll): it signs in with TOTP and lands on its wallet, finds its own customers only, credits one from
its wallet (paid at its reseller price) and reads the charge in its ledger."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyotp
import pytest

from proxyplane.domains.operators.service import by_email
from proxyplane.platform import Platform
from tests.adapters.admin.test_console_browser import base_url, browser, no_sideways_scroll  # noqa: F401
from tests.adapters.admin.test_lists_browser import on_platform
from tests.domains.operators.helpers import operator_caller, run, unique_operator_email
from tests.support import make_account, unique_email


async def reseller_with_customers(platform: Platform) -> tuple[str, str, str, str]:
    """A reseller (20% off) with $50 of credit and one customer; another customer, not its own."""
    email = unique_operator_email()
    made = await run(platform, "operator_reseller_create", operator_email=email, discount_percent=20)
    async with platform.db.unit_of_work() as uow:
        row = await by_email(uow.session, email)
        assert row is not None
    caller, once = operator_caller("reseller", email, row.id), made["one_time_password"]
    await run(platform, "operator_reseller_credit", operator_email=email, cents=5_000, reason="sold")
    mine = await run(
        platform, "operator_create_customer", caller, email=unique_email(), password="pass-12345"
    )
    other = await make_account(platform)
    return email, once, mine["email"], other.email


def sign_in(page: Any, url: str, email: str, once: str) -> None:
    page.goto(f"{url}/admin/login")
    page.fill("input[name=email]", email)
    page.fill("input[name=password]", once)
    page.click("button:has-text('Continue')")
    page.wait_for_url(f"{url}/admin/enrol")
    page.fill("input[name=code]", pyotp.TOTP(page.inner_text("#totp-secret").strip()).now())
    page.fill("input[name=new_password]", "browser-reseller-password")
    page.click("button:has-text('Turn on and continue')")
    page.click("a:has-text('Continue to the console')")
    page.wait_for_url(f"{url}/admin/reseller")


@pytest.mark.parametrize("width", [1280, 390])
def test_a_reseller_credits_its_customer_from_its_wallet(
    browser: Any,  # noqa: F811
    base_url: str,  # noqa: F811
    database_url: str,
    tmp_path: Path,
    width: int,
) -> None:
    email, once, mine, other = on_platform(database_url, tmp_path, reseller_with_customers)
    context = browser.new_context(viewport={"width": width, "height": 860})
    page = context.new_page()
    sign_in(page, base_url, email, once)
    assert page.inner_text("#reseller-balance") == "$50.00"
    no_sideways_scroll(page)
    if width < 600:
        page.click("label.navbutton")
    page.click("nav a:has-text('Customers')")
    page.wait_for_url(f"{base_url}/admin/customers")
    table = page.inner_text("main table")
    assert mine in table and other not in table
    no_sideways_scroll(page)
    page.click(f"a:has-text('{mine}')")
    no_sideways_scroll(page)
    page.fill("input[name=amount]", "20.00")
    page.fill("input[name=reason]", "paid in cash")
    page.click("button:has-text('Apply')")
    page.wait_for_url("**done=credit")
    assert page.inner_text("#balance") == "$20.00"
    page.goto(f"{base_url}/admin/reseller")
    assert page.inner_text("#reseller-balance") == "$34.00"  # 20% off $20.00: $16.00 paid
    ledger = page.inner_text("#reseller-ledger")
    assert "customer_credit" in ledger and "-$16.00" in ledger and "$20.00" in ledger
    no_sideways_scroll(page)
    context.close()
