"""The console's list pages in a real browser (issue 33), desktop and phone (390 px, no sideways scroll):
an operator filters orders and services by customer and status and follows a row to the customer;
an admin edits a product's price on the catalog page and reads it in the audit trail; support sends a
customer a password-reset email from the customer page, takes a ticket and adds an internal note."""

from __future__ import annotations

import asyncio
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pyotp
import pytest

from proxyplane.core.settings import Settings
from proxyplane.platform import Platform
from proxyplane.storage.engine import Database
from tests.adapters.admin.test_console_browser import base_url, browser, no_sideways_scroll  # noqa: F401
from tests.domains.operators.helpers import make_operator
from tests.support import Account, make_account


def on_platform(database_url: str, home: Path, go: Any) -> Any:
    async def wrapped() -> Any:
        settings = Settings(home=home, database_url=database_url, secret_key="test-secret-key")
        platform = Platform(settings, Database(settings.resolved_database_url()))
        try:
            return await go(platform)
        finally:
            await platform.close()

    with ThreadPoolExecutor(1) as pool:  # Playwright's sync API runs a loop in this thread
        return pool.submit(asyncio.run, wrapped()).result()


async def operator_and_customer(platform: Platform) -> tuple[str, str, Account, str]:
    """An owner (email, one-time password), a customer with money, its API key, and stock to sell."""
    from tests.domains.stock.support import fresh_stock

    email, once, _ = await make_operator(platform, "owner")
    account = await make_account(platform)
    await account.credit(10_000)
    await fresh_stock(platform, "proxy_datacenter", "IS", 8)
    return email, once, account, await account.key()


def sign_in(page: Any, url: str, email: str, once: str) -> None:
    page.goto(f"{url}/admin/login")
    page.fill("input[name=email]", email)
    page.fill("input[name=password]", once)
    page.click("button:has-text('Continue')")
    page.wait_for_url(f"{url}/admin/enrol")
    secret = page.inner_text("#totp-secret").strip()
    page.fill("input[name=code]", pyotp.TOTP(secret).now())
    page.fill("input[name=new_password]", "browser-console-password")
    page.click("button:has-text('Turn on and continue')")
    page.click("a:has-text('Continue to the console')")
    page.wait_for_url(f"{url}/admin")


def order(url: str, key: str) -> dict[str, Any]:
    import httpx

    from tests.adapters.rest.test_order import ORDER, body

    got = httpx.post(f"{url}{ORDER}", json=body(count=8), headers={"Authorization": f"Bearer {key}"})
    assert got.status_code == 201, got.text
    service: dict[str, Any] = got.json()["service"]
    return service


@pytest.mark.parametrize("width", [1280, 390])
def test_filter_orders_and_follow_a_row(
    browser: Any,  # noqa: F811
    base_url: str,  # noqa: F811
    database_url: str,
    tmp_path: Path,
    width: int,
) -> None:
    email, once, account, key = on_platform(database_url, tmp_path, operator_and_customer)
    service = order(base_url, key)
    context = browser.new_context(viewport={"width": width, "height": 860})
    page = context.new_page()
    sign_in(page, base_url, email, once)
    if width < 760:  # a phone: the menu opens from its button (it was hidden with no way to open it)
        assert not page.locator("nav a:has-text('Orders')").is_visible()
        page.click("label.navbutton")
    page.click("nav a:has-text('Orders')")
    page.wait_for_url(f"{base_url}/admin/services")
    no_sideways_scroll(page)
    page.fill("input[name=customer]", account.email)
    page.select_option("select[name=status]", "active")
    page.click("#service-filters button:has-text('Filter')")
    page.wait_for_url(f"{base_url}/admin/services?*")
    assert page.inner_text("#service-total").startswith("1 found")
    rows = page.locator("#service-rows li")
    assert rows.count() == 1 and f"#{service['service_number']}" in rows.first.inner_text()
    no_sideways_scroll(page)
    page.select_option("select[name=status]", "pending")
    page.click("#service-filters button:has-text('Filter')")
    page.wait_for_selector("text=Nothing matches these filters.")
    page.select_option("select[name=status]", "")
    page.click("#service-filters button:has-text('Filter')")
    page.wait_for_selector(f"#service-rows a:has-text('{account.email}')")
    page.click(f"#service-rows a:has-text('{account.email}')")
    page.wait_for_url(f"{base_url}/admin/customers/{account.customer_id}")
    no_sideways_scroll(page)
    context.close()


async def operator_and_product(platform: Platform) -> tuple[str, str, dict[str, Any]]:
    from tests.domains.operators.helpers import run

    email, once, _ = await make_operator(platform, "admin")
    product = await run(
        platform,
        "operator_product_add",
        name=f"Browser product {uuid.uuid4().hex[:8]}",
        kind="proxy_isp",
        price_cents=2500,
        config={"ip_count": 1, "country": "US"},
    )
    return email, once, product


@pytest.mark.parametrize("width", [1280, 390])
def test_edit_a_product_price_on_the_catalog_page(
    browser: Any,  # noqa: F811
    base_url: str,  # noqa: F811
    database_url: str,
    tmp_path: Path,
    width: int,
) -> None:
    email, once, product = on_platform(database_url, tmp_path, operator_and_product)
    context = browser.new_context(viewport={"width": width, "height": 860})
    page = context.new_page()
    sign_in(page, base_url, email, once)
    page.goto(f"{base_url}/admin/catalog")
    no_sideways_scroll(page)
    row = page.locator("#products li", has_text=str(product["name"]))
    row.locator("input[name=price]").fill("31.40")
    row.locator("input[name=active]").uncheck()  # off sale again once the test is done
    row.locator("button:has-text('Save')").click()
    page.wait_for_url(f"{base_url}/admin/catalog?done=product")
    row = page.locator("#products li", has_text=str(product["name"]))
    assert row.locator(".product-price").inner_text() == "$31.40" and "off sale" in row.inner_text()
    no_sideways_scroll(page)
    page.goto(f"{base_url}/admin/audit?actor={email}&action=operator_product_set")
    entry = page.locator("#audit-entries li").first.inner_text()
    assert f"product:{product['product_id']}" in entry and "2500" in entry and "3140" in entry
    no_sideways_scroll(page)
    context.close()


async def support_and_customer(platform: Platform) -> tuple[str, str, Account]:
    email, once, _ = await make_operator(platform, "support")
    return email, once, await make_account(platform)


@pytest.mark.parametrize("width", [1280, 390])
def test_send_a_password_reset_email_from_the_customer_page(
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
    assert page.locator("#resend-emails").is_visible()
    assert page.locator("#email-verification").count() == 0  # a test customer's address is verified
    no_sideways_scroll(page)
    page.click("#email-password_reset")
    page.wait_for_url(f"{base_url}/admin/customers/{customer.customer_id}?done=*")
    assert "password_reset email queued" in page.inner_text(".flash")
    no_sideways_scroll(page)
    context.close()


async def support_and_ticket(platform: Platform) -> tuple[str, str, str]:
    """A support operator and a customer's ticket, opened as the customer's own door opens one."""
    from proxyplane.domains.tickets.service import open_ticket

    email, once, _ = await make_operator(platform, "support")
    customer = await make_account(platform)
    async with platform.db.unit_of_work() as uow:
        ticket = await open_ticket(uow.session, customer.customer_id, "browser desk", "it is slow")
        await uow.commit()
    return email, once, str(ticket.id)


@pytest.mark.parametrize("width", [1280, 390])
def test_take_a_ticket_and_add_an_internal_note(
    browser: Any,  # noqa: F811
    base_url: str,  # noqa: F811
    database_url: str,
    tmp_path: Path,
    width: int,
) -> None:
    email, once, ticket_id = on_platform(database_url, tmp_path, support_and_ticket)
    context = browser.new_context(viewport={"width": width, "height": 860})
    page = context.new_page()
    sign_in(page, base_url, email, once)
    page.goto(f"{base_url}/admin/tickets/{ticket_id}")
    assert "Nobody has this ticket." in page.inner_text("#assigned-to")
    no_sideways_scroll(page)
    page.click("#take-ticket")
    page.wait_for_url(f"{base_url}/admin/tickets/{ticket_id}?done=assigned")
    assert email in page.inner_text("#assigned-to")
    page.fill("textarea[name=note]", "looked at it, waiting on the node")
    page.click("button:has-text('Add note')")
    page.wait_for_url(f"{base_url}/admin/tickets/{ticket_id}?done=note+added")
    assert "waiting on the node" in page.inner_text("#ticket-notes")
    no_sideways_scroll(page)
    page.goto(f"{base_url}/admin/tickets")
    page.click("#assigned-filter a:has-text('assigned to me')")
    page.wait_for_url(f"{base_url}/admin/tickets?assigned=me")
    rows = page.locator("table tbody tr")
    assert rows.count() == 1 and email in rows.first.inner_text()  # only the one this operator took
    no_sideways_scroll(page)
    rows.first.locator("a").click()
    page.wait_for_url(f"{base_url}/admin/tickets/{ticket_id}")
    context.close()
