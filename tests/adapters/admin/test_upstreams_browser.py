"""The console's upstream pools and margin pages in a real browser (issue 36.4), desktop and phone (390 px,
no sideways scroll): an owner opens Upstreams from the menu, registers a supplier (a pproxy process on
loopback) from the form, checks it (up: through it to the console's own address), disables it, and reads
the pool's cost on the Margin page (bytes relayed x its price per GB)."""

from __future__ import annotations

import socket
import time
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from proxyplane.adapters.admin.base import money
from proxyplane.core.clock import utcnow
from proxyplane.platform import Platform
from proxyplane.storage.repos import upstreams as repo
from tests.adapters.admin.test_console_browser import base_url, browser, no_sideways_scroll  # noqa: F401
from tests.adapters.admin.test_lists_browser import on_platform, sign_in
from tests.adapters.admin.test_upstream_pages import drop_pool
from tests.domains.operators.helpers import make_operator, run
from tests.domains.upstreams.suppliers import free_tcp_port, start_pproxy, stop

NBYTES = 2_000_000_000
PER_GB = 300  # cents


def listening(port: int, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), 0.5).close()
            return
        except OSError:
            assert time.monotonic() < deadline, f"nothing listens on {port}"
            time.sleep(0.05)


def open_menu(page: Any, width: int, label: str) -> None:
    if width < 760:  # a phone: the menu opens from its button
        page.click("label.navbutton")
    page.click(f"nav a:has-text('{label}')")


@pytest.mark.parametrize("width", [1280, 390])
def test_register_check_disable_and_read_the_margin(
    browser: Any,  # noqa: F811
    base_url: str,  # noqa: F811
    database_url: str,
    tmp_path: Path,
    width: int,
) -> None:
    async def owner(platform: Platform) -> tuple[str, str]:
        email, once, _ = await make_operator(platform, "owner")
        return email, once

    email, once = on_platform(database_url, tmp_path, owner)
    pool, name = f"b{uuid.uuid4().hex[:10]}", f"supplier {uuid.uuid4().hex[:6]}"
    port = free_tcp_port()
    proc = start_pproxy("http", "sup", "sup-pw", port)
    context = browser.new_context(viewport={"width": width, "height": 860})
    try:
        listening(port)
        page = context.new_page()
        sign_in(page, base_url, email, once)
        open_menu(page, width, "Upstreams")
        page.wait_for_url(f"{base_url}/admin/upstreams")
        no_sideways_scroll(page)
        form = page.locator("#upstream-add")
        for field, value in (("pool", pool), ("name", name), ("host", "127.0.0.1"), ("port", str(port)),
                             ("username", "sup"), ("password", "sup-pw"), ("cost_per_gb", "3"),
                             ("template", "{user}"), ("check_target", urlsplit(base_url).netloc)):
            form.locator(f"[name={field}]").fill(value)
        form.locator("button:has-text('Add supplier')").click()
        page.wait_for_url(f"{base_url}/admin/upstreams?done=*")
        row = page.locator("li.upstream", has_text=name)
        assert row.locator(".health").inner_text() == "unknown" and "sup-pw" not in page.content()
        assert row.locator(".cost").inner_text() == "$3.00"
        no_sideways_scroll(page)
        row.locator("button:has-text('Check now')").click()
        page.wait_for_url(f"{base_url}/admin/upstreams?done=checked*")
        row = page.locator("li.upstream", has_text=name)
        assert row.locator(".health").inner_text() == "up", row.inner_text()
        row.locator("button:has-text('Disable')").click()
        page.wait_for_url(f"{base_url}/admin/upstreams?done=disabled*")
        row = page.locator("li.upstream", has_text=name)
        assert row.locator(".state").inner_text() == "disabled"
        assert row.locator("button:has-text('Enable')").count() == 1
        no_sideways_scroll(page)

        async def relayed(platform: Platform) -> None:  # what gateway nodes' usage batches add
            [u] = await run(platform, "operator_upstream_list", pool=pool)
            async with platform.db.unit_of_work() as uow:
                hour = utcnow().replace(minute=0, second=0, microsecond=0)
                await repo.add_usage(uow.session, [(uuid.UUID(u["upstream_id"]), hour, NBYTES // 4,
                                                    NBYTES - NBYTES // 4, 5, 0)])
                await uow.commit()

        on_platform(database_url, tmp_path, relayed)
        open_menu(page, width, "Margin")
        page.wait_for_url(f"{base_url}/admin/margin")
        page.fill("#margin-filters input[name=pool]", pool)
        page.click("#margin-filters button:has-text('Show')")
        page.wait_for_url(f"{base_url}/admin/margin?*")
        section = page.locator(f"#margin-{pool}")
        assert section.locator(".cost").inner_text() == money(NBYTES * PER_GB // 10**9)  # $6.00
        assert section.locator(".revenue").inner_text() == "$0.00"  # no service draws from it yet
        assert "2.00 GB" in section.inner_text() and "5 tunnels" in section.inner_text()
        no_sideways_scroll(page)
    finally:
        context.close()
        stop(proc)

        async def cleanup(platform: Platform) -> None:
            await drop_pool(platform, pool)

        on_platform(database_url, tmp_path, cleanup)
