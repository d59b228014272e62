"""Webhooks in a real browser: add an endpoint (secret copied once), send test events that the real worker
delivers to a loopback receiver (one refused with a 500, one accepted), redeliver the failed one, rotate the
secret, screenshot the endpoint page, then delete it after the confirmation page."""

from __future__ import annotations

import asyncio
import http.server
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from proxyplane.core.settings import Settings
from proxyplane.jobs.webhooks import WebhookWorker
from proxyplane.platform import Platform
from proxyplane.storage.engine import Database
from tests.adapters.web.browser import serve
from tests.adapters.web.test_browser import browser, shots, sign_up  # noqa: F401  (fixtures)


class Hook(http.server.BaseHTTPRequestHandler):
    answers: list[int] = []  # status codes to answer, in order; 200 once used up

    def do_POST(self) -> None:  # noqa: N802
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        status = Hook.answers.pop(0) if Hook.answers else 200
        body = b"ok" if status < 300 else b"upstream exploded: " + b"x" * 400
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def hook_url() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hook)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/proxyplane/events"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def base_url(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with pytest.MonkeyPatch.context() as mp:  # the served app accepts loopback http endpoints
        mp.setenv("PROXYPLANE_WEBHOOKS_ALLOW_HTTP_LOOPBACK", "true")
        with serve(database_url, tmp_path_factory.mktemp("home")) as url:
            yield url


def deliver(database_url: str, home: Path) -> None:
    """Run the real delivery worker (one attempt per delivery) until nothing is due."""
    settings = Settings(
        home=home,
        database_url=database_url,
        secret_key="test-secret-key",  # the served app's key: the worker decrypts the signing secret
        webhooks_allow_http_loopback=True,
        webhook_max_attempts=1,
        webhook_timeout_seconds=5.0,
    )

    async def run() -> None:
        platform = Platform(settings, Database(settings.resolved_database_url()))
        worker = WebhookWorker(platform, name="browser-test-worker")
        try:
            while await worker.run_once():
                pass
        finally:
            await worker.close()
            await platform.db.dispose()

    with ThreadPoolExecutor(1) as pool:  # Playwright's sync API keeps an event loop in this thread
        pool.submit(asyncio.run, run()).result(timeout=60)


def test_webhook_endpoint_page(
    browser: Any,  # noqa: F811
    base_url: str,
    hook_url: str,
    shots: Path,  # noqa: F811
    database_url: str,
    tmp_path: Path,
) -> None:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=base_url)
    page = context.new_page()
    sign_up(page, base_url)
    page.click("nav.mainnav >> text=Webhooks")
    page.fill("input[name=url]", hook_url)
    page.fill("input[name=description]", "order system")
    page.check("input[value='service.expiring_soon']")
    page.check("input[value='wallet.credited']")
    page.click("button:has-text('Add endpoint')")
    secret = page.inner_text("#secret")
    assert secret.startswith("whsec_")
    page.click("#new-secret button.copy")
    page.wait_for_selector("#new-secret button.copy.done")
    assert page.evaluate("navigator.clipboard.readText()") == secret
    page.click("text=Open the endpoint")
    assert secret not in page.content()

    Hook.answers = [500]
    for _ in range(2):  # the first is refused with a 500 (one attempt here), the second accepted
        with page.expect_navigation():
            page.click("button:has-text('Send test event')")
        assert "Test event queued" in page.inner_text(".flash")
        deliver(database_url, tmp_path)
    deliver(database_url, tmp_path)
    page.reload()
    rows = page.locator("#deliveries tbody tr")
    assert rows.count() == 2
    assert "succeeded" in rows.nth(0).inner_text() and "200" in rows.nth(0).inner_text()
    failed = rows.nth(1).inner_text()
    assert "failed" in failed and "500" in failed and "upstream exploded" in failed
    rows.nth(1).locator("button:has-text('Redeliver')").click()
    page.wait_for_selector("text=queued again")
    deliver(database_url, tmp_path)
    page.reload()
    assert [rows.nth(i).locator(".badge").inner_text() for i in range(3)] == [
        "succeeded",
        "succeeded",
        "failed",
    ]

    page.once("dialog", lambda dialog: dialog.accept())
    page.click("button:has-text('Rotate secret')")
    rotated = page.inner_text("#secret")
    assert rotated.startswith("whsec_") and rotated != secret
    page.screenshot(path=str(shots / "webhook-endpoint.png"), full_page=True)

    page.click("text=Delete endpoint…")
    page.click("button:has-text('Delete endpoint')")
    page.wait_for_selector("text=Endpoint deleted")
    assert "No webhook endpoints yet." in page.content()
    context.close()
