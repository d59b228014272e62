"""Issue 22.5 in a real browser: reloading the page a creating form led to creates nothing (post/redirect/
get), the one-time secret is gone after the reload, and sending the same form again (Back, submit) does
not create a second API key or support ticket."""

from __future__ import annotations

from typing import Any

from tests.adapters.web.test_browser import base_url, browser, sign_up  # noqa: F401  (fixtures)


def test_reload_and_resubmit_after_create_create_nothing(browser: Any, base_url: str) -> None:  # noqa: F811
    page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
    sign_up(page, base_url)

    page.goto(f"{base_url}/keys")
    page.fill("input[name=name]", "reload check")
    page.check("input[name=preset][value=read_only]")
    page.click("button:has-text('Create key')")
    page.wait_for_selector("#new-key")
    assert page.url.startswith(f"{base_url}/keys")  # a GET page, not the POST's answer
    secret = page.inner_text("#secret")
    page.reload()
    assert page.locator("#new-key").count() == 0 and secret not in page.content()
    page.go_back()  # the form page before the POST (its token already used) ...
    page.goto(f"{base_url}/keys")
    assert page.locator("table.table tbody tr").count() == 1

    page.goto(f"{base_url}/tickets")
    page.fill("input[name=subject]", "Reload check")
    page.fill("textarea[name=message]", "Does a reload open a second ticket?")
    token = page.get_attribute("input[name=form_token]", "value")
    csrf = page.get_attribute("input[name=csrf]", "value")
    page.click("button:has-text('Send')")
    page.wait_for_url(f"{base_url}/tickets/*")
    page.reload()
    # the same form sent again, as Back + submit does: same token, nothing new
    again = page.request.post(
        f"{base_url}/tickets",
        form={"csrf": csrf or "", "form_token": token or "", "subject": "Reload check", "message": "again"},
        max_redirects=0,
    )
    assert again.status == 303
    page.goto(f"{base_url}/tickets")
    assert "already sent" in page.inner_text(".flash")
    assert page.locator("text=Reload check").count() == 1
    page.context.close()
