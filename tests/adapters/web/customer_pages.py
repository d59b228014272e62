"""A customer with every kind of content, made through the dashboard in a real browser (issue 30.10): a
rotating service with two sub-users (one named, one with a traffic limit) and traffic (a destination with
traffic and one with only a refusal), a static service, an unpaid (pending) order, a ticket, an API key, a
webhook endpoint with a delivery, and an OAuth client's pending consent request. `pages` maps every
dashboard page (the app's own list of GET routes) to a URL of this customer's."""

from __future__ import annotations

import asyncio
import re
import secrets
import threading
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import httpx

from tests.adapters.web.test_browser import sign_up

T = TypeVar("T")
COUNTRY = "LU"  # this module's own static stock country
HOOK = "http://127.0.0.1:9/proxyplane/events"  # never delivered: the test event waits as a delivery row
QUOTED = f"/buy?product_kind=proxy_datacenter&geo_source=maxmind&period_months=1&n_{COUNTRY}=8"
# a fragment (seen inside /buy) and files, not pages
DOWNLOADS = {"/buy/quote", "/invoices/{invoice_id}.pdf", "/services/{service_id}/endpoints.{ext}"}


@dataclass
class Customer:
    email: str
    rotating: str  # service ids
    static: str
    pending: str
    subusers: dict[str, str]  # login -> name ("" for none)
    pages: dict[str, list[str]] = field(default_factory=dict)  # route path -> URLs (relative)
    anonymous: list[str] = field(default_factory=list)
    refusals: list[str] = field(default_factory=list)  # URLs whose answer is a 4xx page (made-up ids)


def in_store(database_url: str, home: Path, work: Callable[[Any], Awaitable[T]]) -> T:
    """Run `work(platform)` against the served app's database (own event loop, in a thread: Playwright's
    sync API keeps a loop in this one)."""
    from proxyplane.core.settings import Settings
    from proxyplane.platform import Platform
    from proxyplane.storage.engine import Database

    async def run() -> T:
        settings = Settings(home=home, database_url=database_url, secret_key="test-secret-key")
        platform = Platform(settings, Database(settings.resolved_database_url()))
        try:
            return await work(platform)
        finally:
            await platform.db.dispose()

    out: list[T] = []
    thread = threading.Thread(target=lambda: out.append(asyncio.run(run())))
    thread.start()
    thread.join()
    return out[0]


def dashboard_pages() -> set[str]:
    """The GET routes the dashboard installs (what app.state.web_pages holds in the served app)."""
    from fastapi import FastAPI

    from proxyplane.adapters.web import install_dashboard

    app = FastAPI()
    install_dashboard(app)
    return set(app.state.web_pages)


def _service_id(url: str) -> str:
    found = re.search(r"/services/([0-9a-f-]{36})", url)
    assert found, url
    return found.group(1)


def _stock_and_money(email: str) -> Callable[[Any], Awaitable[None]]:
    async def work(platform: Any) -> None:
        from sqlalchemy import select, update

        from proxyplane.core.clock import utcnow
        from proxyplane.domains.stock.seed import seed_demo
        from proxyplane.storage.models import Customer as Row
        from tests.domains.stock.support import fresh_stock
        from tests.support import Account

        async with platform.db.unit_of_work() as uow:
            await seed_demo(uow.session)
            await uow.commit()
        await fresh_stock(platform, "proxy_datacenter", COUNTRY, 40)
        async with platform.db.unit_of_work() as uow:
            cid = (await uow.session.execute(select(Row.id).where(Row.email == email))).scalar_one()
            if hasattr(Row, "email_verified_at"):  # issue 34: only a confirmed address buys
                await uow.session.execute(update(Row).where(Row.id == cid).values(email_verified_at=utcnow()))
            await uow.commit()
        await Account(platform, cid, email, "").credit(20_000)

    return work


def _traffic(sid: str) -> Callable[[Any], Awaitable[None]]:
    """Traffic to one destination and a refusal (no request, no byte) against another, this minute."""

    async def work(platform: Any) -> None:
        from proxyplane.core.clock import utcnow
        from proxyplane.gateway.metering import UsageRow
        from proxyplane.gateway.usage_sink import write_usage

        minute = utcnow().replace(second=0, microsecond=0)  # in the term, which started at the purchase
        await write_usage(
            platform.db,
            [
                UsageRow(sid, minute, "origin.example", requests=12, bytes_down=2_500_000_000),
                UsageRow(sid, minute, "refused.example", errors={"auth_wrong_password": 3}),
            ],
        )

    return work


def _consent_url(base_url: str) -> str:
    """A pending authorization request of a dynamically registered client with a self-declared name."""
    with httpx.Client(base_url=base_url) as http:
        client = http.post(
            "/oauth/register",
            json={
                "redirect_uris": ["http://127.0.0.1:33418/callback"],
                "client_name": "Totally Official App",
            },
        )
        assert client.status_code == 201, client.text
        params = {
            "response_type": "code",
            "client_id": client.json()["client_id"],
            "redirect_uri": "http://127.0.0.1:33418/callback",
            "code_challenge": "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
            "code_challenge_method": "S256",
            "state": "st",
            "resource": base_url + "/api/v1/mcp",
        }
        r = http.get("/oauth/authorize", params=params)
        assert r.status_code in (302, 303, 307), r.text
        location = r.headers["location"]
    return location.removeprefix(base_url)


def make_customer(browser: Any, base_url: str, database_url: str, home: Path) -> Customer:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    email = sign_up(page, base_url)
    in_store(database_url, home, _stock_and_money(email))

    page.goto(f"{base_url}/catalog")
    page.click("section.product:has-text('Rotating datacenter: 10 GB') button:has-text('Buy for')")
    page.wait_for_url(re.compile(r".*/services/[0-9a-f-]+$"))
    rotating = _service_id(page.url)
    tag = secrets.token_hex(3)  # sub-user logins are unique across the store, which the suite shares
    subusers = {f"team_alpha_{tag}": "Scraper fleet · EU", f"team_beta_{tag}": ""}
    for login, name in subusers.items():
        page.fill("#subuser-create input[name=login]", login)
        page.fill("#subuser-create input[name=name]", name)
        if not name:
            page.fill("#subuser-create input[name=traffic_limit]", "1")
        with page.expect_navigation():
            page.click("#subuser-create button")
    in_store(database_url, home, _traffic(rotating))

    page.goto(f"{base_url}/buy")
    page.fill(f"input[name=n_{COUNTRY}]", "10")
    page.wait_for_selector("#quote-total")
    page.fill("input[name=whitelist]", "127.0.0.1")
    page.check("input[name=use_balance]")
    with page.expect_navigation():
        page.click("button:has-text('Buy now')")
    assert "/services/" in page.url, page.inner_text("main")
    static = _service_id(page.url)

    page.goto(f"{base_url}/buy")
    page.fill(f"input[name=n_{COUNTRY}]", "8")
    page.wait_for_selector("#quote-total")
    page.fill("input[name=whitelist]", "127.0.0.1")
    page.uncheck("input[name=use_balance]")  # all of it by card: the checkout is left open, unpaid
    page.click("button:has-text('Buy now')")
    page.wait_for_url(re.compile(r".*/checkout/test/.*"))
    page.goto(f"{base_url}/services")
    pending_link = page.locator("tr:has(.badge:text-is('pending')) a").first
    pending = _service_id(str(pending_link.get_attribute("href")))

    page.goto(f"{base_url}/tickets")
    page.fill("input[name=subject]", "Exit IPs in Luxembourg")
    page.fill("textarea[name=message]", "Could I get two more addresses in the same /24?")
    with page.expect_navigation():
        page.click("button:has-text('Send')")
    ticket = page.url.rsplit("/", 1)[1]

    page.goto(f"{base_url}/keys")
    page.fill("input[name=name]", "inventory job")
    page.check("input[value='services:read']")
    page.click("button:has-text('Create key')")
    page.wait_for_selector("#secret")

    page.goto(f"{base_url}/webhooks")
    page.fill("input[name=url]", HOOK)
    page.fill("input[name=description]", "order system")
    page.click("button:has-text('Add endpoint')")
    page.click("text=Open the endpoint")
    endpoint = page.url.rsplit("/", 1)[1]
    with page.expect_navigation():
        page.click("button:has-text('Send test event')")
    delivery = str(page.locator("#deliveries a[href*='/deliveries/']").first.get_attribute("href"))
    context.close()

    customer = Customer(email, rotating, static, pending, subusers)
    svc = "/services/{service_id}"
    customer.pages = {
        svc: [f"/services/{rotating}", f"/services/{static}", f"/services/{pending}"],
        svc + "/cancel": [f"/services/{static}/cancel", f"/services/{pending}/cancel"],
        "/tickets/{ticket_id}": [f"/tickets/{ticket}"],
        "/webhooks/{endpoint_id}": [f"/webhooks/{endpoint}"],
        "/webhooks/{endpoint_id}/delete": [f"/webhooks/{endpoint}/delete"],
        "/webhooks/{endpoint_id}/deliveries/{delivery_id}": [delivery],
        "/oauth/consent": [_consent_url(base_url)],
        "/buy": ["/buy", QUOTED],  # with a quote shown (what /buy/quote's fragment fills in)
    }
    for path in sorted(dashboard_pages() - DOWNLOADS):
        if path in ("/login", "/signup"):
            customer.anonymous.append(path)
        elif "{" not in path:
            customer.pages.setdefault(path, [path])
        elif path not in customer.pages:  # a page of a link sent by mail, say: its refusal page at least
            url = re.sub(r"\{[^}]+\}", lambda _: uuid.uuid4().hex, path)
            customer.pages[path] = [url]
            customer.refusals.append(url)
    customer.pages["/services/{service_id} (unknown)"] = [f"/services/{uuid.uuid4()}"]  # the error page
    customer.refusals.extend(customer.pages["/services/{service_id} (unknown)"])
    return customer
