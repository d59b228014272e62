"""Issue 22.6 in a real browser: a rotating 10 GB service's page shows the term's traffic against the
quota with a bar, and a Copy button puts a ready http://login:password@host:port line on the clipboard."""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import Callable, Coroutine
from datetime import timedelta
from typing import Any

from tests.adapters.web.test_browser import base_url, browser, sign_up  # noqa: F401  (fixtures)

GB = 10**9  # decimal, as the plans are sold (core/units.py)


def run(database_url: str, job: Callable[[Any], Coroutine[Any, Any, None]], home: Any) -> None:
    """Run `job(platform)` on the test database in a thread of its own (the server runs on another loop)."""
    from proxyplane.core.settings import Settings
    from proxyplane.platform import Platform

    async def main() -> None:
        platform = Platform(Settings(home=home, database_url=database_url))
        try:
            await job(platform)
        finally:
            await platform.close()

    worker = threading.Thread(target=lambda: asyncio.run(main()))
    worker.start()
    worker.join()


async def seed(platform: Any) -> None:
    from proxyplane.domains.stock.seed import seed_demo
    from tests.domains.stock.support import fresh_stock

    async with platform.db.unit_of_work() as uow:
        await seed_demo(uow.session)
        await uow.commit()
    await fresh_stock(platform, "proxy_datacenter", "MD", 4)


def traffic(sid: str) -> Callable[[Any], Coroutine[Any, Any, None]]:
    """3 GB through the service, in a term that started a day ago."""

    async def job(platform: Any) -> None:
        from sqlalchemy import update

        from proxyplane.core.clock import utcnow
        from proxyplane.gateway.metering import UsageRow
        from proxyplane.gateway.usage_sink import write_usage
        from proxyplane.storage.models import Service

        async with platform.db.unit_of_work() as uow:
            await uow.session.execute(
                update(Service)
                .where(Service.service_id == uuid.UUID(sid))
                .values(current_period_start=utcnow() - timedelta(days=1))
            )
            await uow.commit()
        minute = utcnow().replace(second=0, microsecond=0) - timedelta(hours=3)
        await write_usage(platform.db, [UsageRow(sid, minute, "example.com", requests=9, bytes_down=3 * GB)])

    return job


def test_rotating_page_quota_bar_and_copyable_url(
    browser: Any,  # noqa: F811
    base_url: str,  # noqa: F811
    database_url: str,
    tmp_path: Any,
) -> None:
    run(database_url, seed, tmp_path)
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=base_url)
    page = context.new_page()
    sign_up(page, base_url)
    page.goto(f"{base_url}/wallet")
    page.fill("input[name=amount]", "10")
    page.click("button:has-text('Continue to payment')")
    page.click("button:has-text('Pay')")
    page.goto(f"{base_url}/catalog")
    page.click("section.product:has-text('Rotating datacenter: 10 GB') button:has-text('Buy for')")
    page.wait_for_url(f"{base_url}/services/*")
    run(database_url, traffic(page.url.rsplit("/", 1)[1]), tmp_path)
    page.reload()
    assert page.inner_text("#plan-used") == "3 GB" and page.inner_text("#plan-left") == "7 GB"
    assert page.inner_text("#plan-percent") == "30.0% used"
    assert page.locator("#plan-use svg.quota rect.fill").get_attribute("width") == "30.0"
    assert "0 IPs" not in page.inner_text("main")
    login = page.inner_text("#credentials code")
    page.click("#proxy-lines li:first-child button.copy")
    page.wait_for_selector("#proxy-lines li:first-child button.copy.done")
    copied = page.evaluate("navigator.clipboard.readText()")
    assert copied.startswith(f"http://{login}:") and "•" not in copied
    password = copied.split(":", 2)[2].split("@", 1)[0]
    assert len(password) >= 8 and password not in page.inner_text("main")
    context.close()


def payg_traffic(sid: str) -> Callable[[Any], Coroutine[Any, Any, None]]:
    """1.5 GB through a pay-as-you-go service (the flush charges its 2 started GB)."""

    async def job(platform: Any) -> None:
        from proxyplane.core.clock import utcnow
        from proxyplane.gateway.metering import UsageRow
        from proxyplane.gateway.usage_sink import write_usage

        minute = utcnow().replace(second=0, microsecond=0)
        row = UsageRow(sid, minute, "example.com", requests=2, bytes_down=3 * GB // 2)
        await write_usage(platform.db, [row])

    return job


def test_pay_as_you_go_page_at_desktop_and_phone(
    browser: Any,  # noqa: F811
    base_url: str,  # noqa: F811
    database_url: str,
    tmp_path: Any,
) -> None:
    """Issue 32.4: the demo pay-as-you-go plan bought in the browser; its page shows the use, the rate per
    started GB and the units charged, fits a 390 px phone, and offers no add-traffic form."""
    run(database_url, seed, tmp_path)
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    sign_up(page, base_url)
    page.goto(f"{base_url}/wallet")
    page.fill("input[name=amount]", "10")
    page.click("button:has-text('Continue to payment')")
    page.click("button:has-text('Pay')")
    page.goto(f"{base_url}/catalog")
    page.click("section.product:has-text('Rotating datacenter: pay as you go') button:has-text('Buy for')")
    page.wait_for_url(f"{base_url}/services/*")
    run(database_url, payg_traffic(page.url.rsplit("/", 1)[1]), tmp_path)
    for width in (1280, 390):
        page.set_viewport_size({"width": width, "height": 900})
        page.reload()
        assert page.inner_text("#plan-used") == "1.5 GB" and page.inner_text("#plan") == "Pay as you go"
        assert "per started 1 GB" in page.inner_text("#payg-rate")
        assert page.inner_text("#payg-billed").startswith("2 units charged ($4.00)")
        assert page.locator("#add-traffic").count() == 0
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        page.screenshot(path=str(tmp_path / f"payg-{width}.png"), full_page=True)
    context.close()
