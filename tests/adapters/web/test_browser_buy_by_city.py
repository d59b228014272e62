"""Issue 36 in a real browser at 1280 and 390 px: the buy page's country picker shows the country's
regions and cities with their free IPs, a count in a city gives a live quote naming the city, and the
order from the wallet lands on the new service; the page never scrolls sideways."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.adapters.web.place_stock import COUNTRY, KIND, Placed, add_placed_stock, remove_placed_stock
from tests.adapters.web.test_browser import (  # noqa: F401  (fixtures)
    base_url,
    browser,
    new_context,
    sign_up,
)
from tests.adapters.web.test_browser_rotating import run

NO_SIDEWAYS = "document.documentElement.scrollWidth <= window.innerWidth + 1"


@pytest.mark.parametrize("phone", [False, True], ids=["desktop", "phone"])
def test_buy_statics_in_a_city(
    browser: Any,  # noqa: F811
    base_url: str,  # noqa: F811
    database_url: str,
    tmp_path: Path,
    phone: bool,
) -> None:
    made: list[Placed] = []

    async def seed(platform: Any) -> None:
        made.append(await add_placed_stock(platform, tmp_path))

    run(database_url, seed, tmp_path)
    context = new_context(browser, phone)
    try:
        _buy(context.new_page(), base_url, database_url, tmp_path, made[0], phone)
    finally:
        context.close()

        async def clean(platform: Any) -> None:
            await remove_placed_stock(platform, made[0])

        run(database_url, clean, tmp_path)


def _buy(page: Any, base: str, database_url: str, home: Path, placed: Placed, phone: bool) -> None:
    email = sign_up(page, base)

    async def credit(platform: Any) -> None:
        from tests.adapters.web.test_pages import customer_id
        from tests.support import Account

        await Account(platform, await customer_id(platform, email), email, "").credit(100_000)

    run(database_url, credit, home)
    tag = placed.tag
    page.goto(f"{base}/buy")
    page.select_option("select[name=product_kind]", KIND)
    page.click("button:has-text('Show countries for this choice')")
    page.wait_for_selector(f"select[name=place_country] option[value={COUNTRY}]", state="attached")
    page.select_option("select[name=place_country]", COUNTRY)  # the script reloads with its places
    page.wait_for_selector("#place-table")
    rows = page.inner_text("#place-table")
    assert f"Bavaria {tag}" in rows and f"Alpha {tag}" in rows and f"Beta {tag}" in rows
    field = f"input[name=p_{COUNTRY}_bavaria{tag}_alpha{tag}]"
    assert page.get_attribute(field, "max") == "6"
    page.fill(field, "2")  # the live quote follows the count
    page.wait_for_selector("#quote-total")
    for _ in range(100):  # polled from Python: the page's CSP forbids evaluated strings
        if f"city alpha{tag}" in page.inner_text("#quote"):
            break
        page.wait_for_timeout(100)
    assert f"city alpha{tag}" in page.inner_text("#quote")
    assert page.evaluate(NO_SIDEWAYS)
    shots = home / "shots"
    shots.mkdir(exist_ok=True)
    page.screenshot(path=str(shots / f"buy-city-{'phone' if phone else 'desktop'}.png"), full_page=True)
    page.fill("input[name=whitelist]", "127.0.0.1")
    page.click("button:has-text('Buy now')")
    page.wait_for_url(re.compile(r".*/services/[0-9a-f-]+$"))
    assert "your proxies are ready" in page.inner_text(".flash")
    assert page.evaluate(NO_SIDEWAYS)
    shown = page.content()
    assert sum(ip in shown for ip in placed.alpha) == 2 and not any(ip in shown for ip in placed.beta)
