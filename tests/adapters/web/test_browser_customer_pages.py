"""Issue 30 (9, 10, 11, 14, 15) in a real browser, at desktop width and on a 390 px phone, for a customer
with every kind of content (tests/adapters/web/customer_pages.py):

- 10: no dashboard page scrolls sideways (document.documentElement.scrollWidth <= the viewport), every
  page of the app's own route list visited; none asks for a missing favicon (or anything else: no 404);
- 9: a sub-user's Copy button puts a working proxy URL on the clipboard (scheme, login, real password);
- 11: traffic in decimal units (a 1 GB limit reads "1 GB", 2.5 GB of traffic "2.5 GB"), sub-user names
  shown, set at creation and changed on the page;
- 14: an unpaid order says "awaiting payment" with the way to pay, and offers no sub-users or renewal;
- 15: "Top destinations" lists only destinations with traffic; the favicon is served; the consent page
  says the client's name is unverified."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.adapters.web.browser import serve
from tests.adapters.web.customer_pages import Customer, in_store, make_customer
from tests.adapters.web.test_browser import browser, shots  # noqa: F401  (fixtures)

WIDTHS = {"desktop": {"width": 1280, "height": 900}, "phone": {"width": 390, "height": 844}}


@pytest.fixture(scope="module")
def base_url(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with pytest.MonkeyPatch.context() as mp:  # the webhook endpoint is on loopback http
        mp.setenv("PROXYPLANE_WEBHOOKS_ALLOW_HTTP_LOOPBACK", "true")
        with serve(database_url, tmp_path_factory.mktemp("home")) as url:
            yield url


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("store")


@pytest.fixture(scope="module")
def customer(browser: Any, base_url: str, database_url: str, home: Path) -> Customer:  # noqa: F811
    return make_customer(browser, base_url, database_url, home)


@pytest.fixture(params=list(WIDTHS))
def page(request: pytest.FixtureRequest, browser: Any, base_url: str, customer: Customer) -> Iterator[Any]:  # noqa: F811
    """A signed-in page of the customer at the parametrized width (its name: page.width_name)."""
    from tests.adapters.web.test_browser import PASSWORD

    mobile = request.param == "phone"
    context = browser.new_context(viewport=WIDTHS[request.param], is_mobile=mobile, has_touch=mobile)
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=base_url)
    tab = context.new_page()
    tab.goto(f"{base_url}/login")
    tab.fill("input[name=email]", customer.email)
    tab.fill("input[name=password]", PASSWORD)
    with tab.expect_navigation():
        tab.click("main button")
    tab.width_name = request.param
    yield tab
    context.close()


WIDEST = """(width) => [...document.querySelectorAll("body *")]
  .filter(e => e.getBoundingClientRect().right > width + 1)
  .filter(e => !e.parentElement || e.parentElement.getBoundingClientRect().right <= width + 1)
  .slice(0, 3).map(e => e.tagName.toLowerCase() + (e.id ? "#" + e.id : "") + "." + e.className)"""


def overflow(tab: Any) -> int:
    """How many pixels the page is wider than the viewport (0: no sideways scrolling)."""
    width = tab.evaluate("document.documentElement.scrollWidth")
    return int(width) - int(tab.viewport_size["width"])


def too_wide(tab: Any) -> str:
    """What sticks out: the first elements past the viewport's right edge whose parent does not."""
    return f"{overflow(tab)} px: {tab.evaluate(WIDEST, tab.viewport_size['width'])}"


def test_no_page_scrolls_sideways_and_none_misses_a_file(
    page: Any,
    base_url: str,
    customer: Customer,
    browser: Any,  # noqa: F811
    shots: Path,  # noqa: F811
) -> None:
    missing: list[str] = []
    page.on("response", lambda r: missing.append(r.url) if r.status == 404 else None)
    wide: dict[str, str] = {}
    visited = 0
    for urls in customer.pages.values():
        for url in urls:
            response = page.goto(base_url + url)
            assert response is not None, url
            if url in customer.refusals:
                assert 400 <= response.status < 500, (url, response.status)
                missing[:] = [m for m in missing if m != base_url + url]  # the 404 asked for
            else:
                assert response.status == 200, (url, response.status)
            visited += 1
            if overflow(page) > 0:
                wide[url] = too_wide(page)
    anonymous = browser.new_context(viewport=page.viewport_size)
    other = anonymous.new_page()
    other.on("response", lambda r: missing.append(r.url) if r.status == 404 else None)
    for url in customer.anonymous:
        other.goto(base_url + url)
        if overflow(other) > 0:
            wide[url] = too_wide(other)
    anonymous.close()
    assert visited >= 25
    assert wide == {}, f"wider than {page.viewport_size['width']} px: {wide}"
    assert missing == []
    if page.width_name == "phone":
        page.goto(f"{base_url}/services/{customer.rotating}")
        page.screenshot(path=str(shots / "service-rotating-phone.png"), full_page=True)


def test_subuser_copy_gives_a_working_url_and_names_show(
    page: Any,
    base_url: str,
    customer: Customer,
    database_url: str,
    home: Path,
    shots: Path,  # noqa: F811
) -> None:
    from sqlalchemy import select

    from proxyplane.storage.models.subusers import ServiceSubuser

    async def passwords(platform: Any) -> dict[str, str]:
        async with platform.db.unit_of_work(write=False) as uow:
            rows = await uow.session.execute(
                select(ServiceSubuser).where(ServiceSubuser.login.in_(list(customer.subusers)))
            )
            return {s.login: platform.secrets.decrypt(s.password_enc) for s in rows.scalars()}

    secret = in_store(database_url, home, passwords)
    page.goto(f"{base_url}/services/{customer.rotating}#subusers")
    gateway = page.inner_text("#rotating-gateway dd code")
    assert "PASSWORD" not in page.content()
    for login, name in customer.subusers.items():
        row = page.locator(f"tr.subuser[data-login={login}]")
        if name:
            assert row.locator(".subuser-name").inner_text() == name
        row.locator("button.copy:has-text('Copy HTTP')").click()
        copied = page.evaluate("navigator.clipboard.readText()")
        assert copied.startswith(f"http://{login}:{secret[login]}@{gateway}:"), copied
        assert copied.rsplit(":", 1)[1].isdigit()
        assert secret[login] not in row.inner_text()  # masked on the page, real on the clipboard
        row.locator("button.copy:has-text('Copy SOCKS5')").click()
        assert page.evaluate("navigator.clipboard.readText()").startswith(
            f"socks5h://{login}:{secret[login]}@"
        )
    [beta] = [login for login, name in customer.subusers.items() if not name]
    limited = page.locator(f"tr.subuser[data-login={beta}]")
    assert limited.locator(".subuser-limit").inner_text() == "1 GB"  # 10**9 bytes, not "953.7 MB"

    limited.locator("details.rename summary").click()
    limited.locator("input[name=name]").fill(f"renamed at {page.width_name}")
    with page.expect_navigation():
        limited.locator("button:has-text('Save name')").click()
    assert f"renamed at {page.width_name}" in page.inner_text(
        f"tr.subuser[data-login={beta}] .subuser-name"
    )
    if page.width_name == "phone":
        page.locator("#subusers").screenshot(path=str(shots / "subusers-phone.png"))


def test_usage_in_decimal_units_and_only_real_destinations(
    page: Any, base_url: str, customer: Customer
) -> None:
    page.goto(f"{base_url}/services/{customer.rotating}")
    assert page.inner_text("#plan-used") == "2.5 GB" and page.inner_text("#plan-left") == "7.5 GB"
    tiles = page.inner_text("#usage .tiles")
    assert "2.5 GB" in tiles
    names = page.locator("#destinations li .name").all_inner_texts()
    assert names == ["origin.example"]  # the refusal-only destination draws no row
    assert "auth wrong password" in page.inner_text("#error-kinds")  # still counted as an error

    page.goto(f"{base_url}/services/{customer.static}")  # no traffic at all
    assert page.locator("#destinations li").count() == 0
    assert "No traffic in this window." in page.inner_text("#destinations")


def test_unpaid_order_awaits_payment_without_actions_that_do_not_apply(
    page: Any,
    base_url: str,
    customer: Customer,
    shots: Path,  # noqa: F811
) -> None:
    page.goto(f"{base_url}/services/{customer.pending}")
    paid = page.inner_text("#paid-until")
    assert "awaiting payment" in paid and "pay $" in paid
    pay = page.locator("#paid-until a.pay-now")
    assert "/checkout/" in str(pay.get_attribute("href"))
    for absent in ("#subusers", "#renew", "#usage", "#endpoints"):
        assert page.locator(absent).count() == 0, absent
    assert page.locator("#unpaid a.pay-now").count() == 1
    page.click("#cancel-order")
    assert "Cancel order" in page.inner_text("h1") and "paid until" not in page.inner_text("main")
    page.goto(f"{base_url}/services")
    row = page.locator(f"tr:has(a[href='/services/{customer.pending}'])")
    assert "awaiting payment" in row.inner_text()
    if page.width_name == "phone":
        page.goto(f"{base_url}/services/{customer.pending}")
        page.screenshot(path=str(shots / "unpaid-order-phone.png"), full_page=True)


def test_favicon_and_unverified_client_note(page: Any, base_url: str, customer: Customer) -> None:
    icon = page.request.get(f"{base_url}/favicon.ico")
    assert (
        icon.status == 200
        and icon.headers["content-type"] == "image/x-icon"
        and icon.body()[:4] == b"\0\0\1\0"
    )
    page.goto(base_url + customer.pages["/oauth/consent"][0])
    note = page.inner_text("#unverified")
    assert "Unverified application" in note and "Totally Official App" in note and "127.0.0.1:33418" in note
    assert page.evaluate("document.documentElement.scrollWidth") <= page.viewport_size["width"]
