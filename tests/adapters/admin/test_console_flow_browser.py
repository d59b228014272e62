"""The issue's console check in a real browser, desktop and phone (issue 33, "How it is checked"): an
operator signs in with TOTP, finds a customer by exit IP, suspends the customer's dedicated IP and sees
the proxy refused (a gateway node in the server process, as `proxyplane serve` runs it), refunds the
order, answers the customer's ticket, and reads the audit trail of all of it (never the proxy password)."""

from __future__ import annotations

import asyncio
import os
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pyotp
import pytest

from proxyplane.core.settings import Settings
from proxyplane.platform import Platform
from proxyplane.storage.engine import Database
from tests.adapters.web.browser import CHROMIUM, CHROMIUM_ARGS, serve
from tests.adapters.web.test_browser_e2e import origin_url  # noqa: F401  (fixture)
from tests.domains.operators.helpers import code_now, make_operator
from tests.gateway.conftest import free_port
from tests.support import make_account

if not Path(CHROMIUM).exists():
    pytest.skip(f"{CHROMIUM} is missing", allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api")
API = "/api/v1/customer"


@pytest.fixture(scope="module")
def base_url(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    env = {
        "PROXYPLANE_GATEWAY_HTTP_PORT": "-1",
        "PROXYPLANE_GATEWAY_HTTPS_PORT": "-1",
        "PROXYPLANE_GATEWAY_SOCKS_PORT": "-1",
        "PROXYPLANE_GATEWAY_STATIC_HTTP_PORT": str(free_port([])),
        "PROXYPLANE_GATEWAY_STATIC_HTTPS_PORT": "-1",
        "PROXYPLANE_GATEWAY_STATIC_SOCKS_PORT": "-1",
        "PROXYPLANE_GATEWAY_IN_SERVE": "true",
        "PROXYPLANE_GATEWAY_DEV_ALLOW_LOOPBACK": "true",  # the test's origin is on loopback
    }
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        with serve(database_url, tmp_path_factory.mktemp("home"), gateway=True) as url:
            yield url
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


def setup(database_url: str, home: Path, base: str) -> dict[str, Any]:
    """An owner operator; a customer who bought a dedicated IP (through the running server, so that its
    gateway node hears of it) and opened a ticket."""
    from proxyplane.domains.stock.seed import seed_demo
    from tests.domains.stock.support import fresh_stock

    async def go() -> dict[str, Any]:
        settings = Settings(home=home, database_url=database_url, secret_key="test-secret-key")
        platform = Platform(settings, Database(settings.resolved_database_url()))
        try:
            async with platform.db.unit_of_work() as uow:
                await seed_demo(uow.session)
                await uow.commit()
            [exit_ip] = await fresh_stock(platform, "proxy_personal", "US", 1)
            email, once, _ = await make_operator(platform, "owner")
            customer = await make_account(platform)
            await customer.credit(5_000)
            key = await customer.key()
        finally:
            await platform.close()
        auth = {"Authorization": f"Bearer {key}"}
        async with httpx.AsyncClient(base_url=base, headers=auth, timeout=20) as client:
            items = (await client.get(f"{API}/catalog?limit=100")).json()["items"]
            product = next(p for p in items if p["name"].startswith("Dedicated IP"))
            bought = await client.post(f"{API}/services", json={"product_id": product["product_id"]})
            assert bought.status_code == 201, bought.text
            sid = bought.json()["service"]["service_id"]
            proxy = (await client.get(f"{API}/services/{sid}/proxy/auth?reveal=true")).json()
            ips = (await client.get(f"{API}/services/{sid}/proxy/ips")).json()["endpoints"]
            ticket = await client.post(
                f"{API}/tickets", json={"subject": "console flow", "message": "is my proxy down?"}
            )
            assert ticket.status_code in (200, 201), ticket.text
        [endpoint] = [e["http"] for e in ips]
        assert endpoint.split(":")[0] == exit_ip
        return {
            "operator": email,
            "once": once,
            "customer_id": customer.customer_id,
            "exit_ip": exit_ip,
            "endpoint": endpoint,
            "login": proxy["login"],
            "password": proxy["password"],
            "service_id": sid,
            "ticket_id": ticket.json()["ticket_id"],
        }

    with ThreadPoolExecutor(1) as pool:  # Playwright's sync API runs a loop in this thread
        return pool.submit(asyncio.run, go()).result()


def fetch(s: dict[str, Any], url: str) -> int:
    """The status the proxy answers for `url` (the customer's login and password on the exit IP)."""
    user = urllib.parse.quote(s["login"], safe="")
    password = urllib.parse.quote(s["password"], safe="")
    proxy = f"http://{user}:{password}@{s['endpoint']}"
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({"http": proxy}))
    try:
        with opener.open(url, timeout=5) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return exc.code


def within(seconds: float, check: Any) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.1)
    return bool(check())


def no_sideways_scroll(page: Any) -> None:
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1"), page.url


@pytest.mark.parametrize("width", [1280, 390])
def test_totp_exit_ip_suspend_refund_ticket_audit(
    browser: Any,
    base_url: str,
    database_url: str,
    tmp_path: Path,
    origin_url: str,  # noqa: F811
    width: int,
) -> None:
    s = setup(database_url, tmp_path, base_url)
    assert within(5, lambda: fetch(s, origin_url) == 200)  # the node serves the bought IP
    context = browser.new_context(viewport={"width": width, "height": 860})
    page = context.new_page()
    # first sign-in: the one-time password, then TOTP enrolment; then a sign-in with a TOTP code
    page.goto(f"{base_url}/admin/login")
    page.fill("input[name=email]", s["operator"])
    page.fill("input[name=password]", s["once"])
    page.click("button:has-text('Continue')")
    page.wait_for_url(f"{base_url}/admin/enrol")
    secret = page.inner_text("#totp-secret").strip()
    page.fill("input[name=code]", pyotp.TOTP(secret).now())
    page.fill("input[name=new_password]", "console-flow-password")
    page.click("button:has-text('Turn on and continue')")
    page.click("a:has-text('Continue to the console')")
    page.wait_for_url(f"{base_url}/admin")
    page.click("button:has-text('Sign out')")
    page.wait_for_url(f"{base_url}/admin/login")
    page.fill("input[name=email]", s["operator"])
    page.fill("input[name=password]", "console-flow-password")
    page.click("button:has-text('Continue')")
    page.wait_for_url(f"{base_url}/admin/totp")
    no_sideways_scroll(page)
    page.fill("input[name=code]", code_now(secret, 1))  # the next step's code: the enrolment used this one
    page.click("button:has-text('Sign in')")
    page.wait_for_url(f"{base_url}/admin")

    # find the customer by the exit IP
    customer_url = f"{base_url}/admin/customers/{s['customer_id']}"
    page.goto(f"{base_url}/admin/customers")
    page.fill("input[name=q]", s["exit_ip"])
    page.click("button:has-text('Search')")
    assert page.locator(f"a[href='/admin/customers/{s['customer_id']}']").count() == 1
    no_sideways_scroll(page)
    page.click(f"a[href='/admin/customers/{s['customer_id']}']")
    page.wait_for_url(customer_url)
    assert s["password"] not in page.content()
    no_sideways_scroll(page)

    # suspend: the proxy is refused at once
    page.click("button[id^=suspend-]")
    page.wait_for_url(f"{customer_url}?done=suspend")
    assert within(3, lambda: fetch(s, origin_url) in (403, 407)), "the suspended IP is still served"

    # refund the order: the unused term back in the wallet, the service cancelled
    before = page.inner_text("#balance")
    page.click("button[id^=refund-]")
    page.wait_for_url(f"{customer_url}?done=refund")
    assert page.inner_text("#balance") != before
    assert "cancelled" in page.inner_text(".svc")
    assert fetch(s, origin_url) in (403, 407)
    no_sideways_scroll(page)

    # answer the customer's ticket from their page
    page.click(f"a[href='/admin/tickets/{s['ticket_id']}']")
    page.wait_for_url(f"{base_url}/admin/tickets/{s['ticket_id']}")
    assert "is my proxy down?" in page.content()
    page.fill("textarea[name=message]", "suspended and refunded, see your wallet")
    page.click("button:has-text('Send reply')")
    page.wait_for_url(f"{base_url}/admin/tickets/{s['ticket_id']}?done=replied")
    assert page.content().count("suspended and refunded, see your wallet") == 1
    no_sideways_scroll(page)

    # the audit trail of it all, with the console door and never the proxy password
    page.goto(f"{base_url}/admin/audit?actor={s['operator']}")
    entries = page.locator("#audit-entries li")
    text = "\n".join(entries.all_inner_texts())
    for action in ("operator_service_suspend", "operator_service_refund", "operator_ticket_reply"):
        assert action in text, text
    assert f"service:{s['service_id']}" in text or s["service_id"] in text
    assert "console" in text and s["password"] not in page.content()
    no_sideways_scroll(page)
    context.close()
