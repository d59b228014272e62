"""The issue's OAuth check in a real browser (Playwright + Debian's Chromium) against the app served by
uvicorn: the official MCP client's OAuthClientProvider discovers the metadata from the 401, sends the
browser to the consent page (sign in first, then back), the customer grants one scope, the code comes
back on the loopback redirect, the client exchanges it with PKCE and calls tools with the token; a tool
outside the grant is refused; revoked in the dashboard, the token is refused at once."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx2
import pytest
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)
from mcp.types import TextContent

from tests.adapters.oauth.conftest import DocumentServer
from tests.adapters.web.browser import CHROMIUM, CHROMIUM_ARGS, serve
from tests.support import make_account

if not Path(CHROMIUM).exists():
    pytest.skip(f"{CHROMIUM} is missing (scripts/test.sh installs it as root)", allow_module_level=True)
async_api = pytest.importorskip("playwright.async_api")
pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def base_url(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    saved = os.environ.get("PROXYPLANE_OAUTH_ALLOW_HTTP_CLIENT_IDS")
    os.environ["PROXYPLANE_OAUTH_ALLOW_HTTP_CLIENT_IDS"] = "true"  # the client document is on loopback http
    try:
        with serve(database_url, tmp_path_factory.mktemp("home")) as url:
            yield url
    finally:
        if saved is None:
            os.environ.pop("PROXYPLANE_OAUTH_ALLOW_HTTP_CLIENT_IDS", None)
        else:
            os.environ["PROXYPLANE_OAUTH_ALLOW_HTTP_CLIENT_IDS"] = saved


class Storage:
    """The client's token storage; it starts with the client's URL client_id (its metadata document)."""

    def __init__(self, client: OAuthClientInformationFull) -> None:
        self.client: OAuthClientInformationFull | None = client
        self.tokens: OAuthToken | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


def text(result: Any) -> str:
    return " ".join(c.text for c in result.content if isinstance(c, TextContent))


async def test_oauth_consent_in_the_browser_then_tool_calls_and_revocation(
    base_url: str, documents: DocumentServer, platform: Any, tmp_path: Path
) -> None:
    account = await make_account(platform)
    callback = documents.base + "/callback"
    client_id = documents.publish(
        "/browser-agent.json", client_name="Browser Agent", redirect_uris=[callback]
    )
    metadata = OAuthClientMetadata(
        redirect_uris=[callback],  # type: ignore[list-item]
        client_name="Browser Agent",
        token_endpoint_auth_method="none",
        grant_types=["authorization_code", "refresh_token"],
    )
    storage = Storage(
        OAuthClientInformationFull(
            client_id=client_id,
            redirect_uris=[callback],  # type: ignore[list-item]
            token_endpoint_auth_method="none",
            grant_types=["authorization_code", "refresh_token"],
        )
    )
    async with async_api.async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = await browser.new_page(viewport={"width": 390, "height": 844}, is_mobile=True)  # a phone
        fits = "document.documentElement.scrollWidth <= window.innerWidth + 1"  # nothing overflows
        one_line = (  # every scope name of the consent form on a single line (no mid-word wrap)
            "[...document.querySelectorAll('#consent .checks code')].every(c =>"
            " c.getBoundingClientRect().height < 1.5 * parseFloat(getComputedStyle(c).lineHeight))"
        )
        page.on("dialog", lambda dialog: dialog.accept())

        async def open_in_browser(url: str) -> None:
            await page.goto(url)
            await page.wait_for_url("**/login**")  # not signed in: sign in first, then back to consent
            await page.fill("input[name=email]", account.email)
            await page.fill("input[name=password]", account.password)
            await page.click("button:has-text('Sign in')")
            await page.wait_for_url("**/oauth/consent**")
            assert "Browser Agent" in await page.inner_text("h1")
            assert await page.evaluate(fits)
            assert await page.evaluate(one_line), "a scope name wraps mid-word"
            await page.locator("input[name=scopes]").evaluate_all(
                "els => els.forEach(e => e.checked = false)"
            )
            await page.check("input[name=scopes][value='customer:read']")
            await page.fill("input[name=spend_limit_daily]", "5")
            await page.screenshot(
                path=str(
                    Path(os.environ.get("PROXYPLANE_SCREENSHOTS", "") or tmp_path) / "oauth-consent.png"
                ),
                full_page=True,
            )
            await page.click("button[value=allow]")
            await page.wait_for_url(callback + "**")

        async def code_from_browser() -> AuthorizationCodeResult:
            query = {k: v[0] for k, v in parse_qs(urlsplit(page.url).query).items()}
            return AuthorizationCodeResult(code=query["code"], state=query.get("state"), iss=query.get("iss"))

        auth = OAuthClientProvider(
            server_url=base_url + "/api/v1/mcp",
            client_metadata=metadata,
            storage=storage,
            redirect_handler=open_in_browser,
            callback_handler=code_from_browser,
        )
        async with httpx2.AsyncClient(auth=auth, timeout=30) as hc:
            async with Client(streamable_http_client(base_url + "/api/v1/mcp", http_client=hc)) as client:
                profile = await client.call_tool("get_profile", {})
                refused = await client.call_tool("get_balance", {})
        assert profile.is_error is False and profile.structured_content is not None
        assert profile.structured_content["email"] == account.email
        assert (
            refused.is_error is True and "missing_scope" in text(refused) and "wallet:read" in text(refused)
        )
        assert storage.tokens is not None and storage.tokens.scope == "customer:read"
        access = storage.tokens.access_token

        await page.goto(base_url + "/keys")
        assert "Browser Agent" in await page.inner_text("#oauth-clients")
        assert await page.evaluate(fits)
        await page.click("#oauth-clients button:has-text('Revoke')")
        await page.wait_for_selector("text=revoked")
        await browser.close()
    init = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    async with httpx2.AsyncClient(timeout=10) as raw:
        after = await raw.post(
            base_url + "/api/v1/mcp",
            json=init,
            headers={"Authorization": f"Bearer {access}", "Accept": "application/json, text/event-stream"},
        )
    assert after.status_code == 401
