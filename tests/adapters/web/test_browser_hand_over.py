"""Issue 34.5 in Chromium: the holder (desktop) hands the account over to a member (a 390 px phone); the
holder's browser is signed out with a page saying so and its password no longer signs in; the member's
Team page names them the account holder and offers no way to leave."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.adapters.web.browser import outbox_link
from tests.adapters.web.test_browser import (  # noqa: F401
    PASSWORD,
    base_url,
    browser,
    new_context,
    shots,
    signed_in_page,
)
from tests.support import unique_email

FITS = "document.documentElement.scrollWidth <= window.innerWidth + 1"


def test_hand_over_closes_the_holders_sign_in(browser: Any, base_url: str, shots: Path) -> None:  # noqa: F811
    desk, owner, owner_email = signed_in_page(browser, base_url)
    heir = unique_email()
    owner.goto(f"{base_url}/team")
    owner.fill("#invite input[name=email]", heir)
    owner.select_option("#invite select[name=role]", "admin")
    owner.click("button:has-text('Send the invitation')")
    owner.wait_for_selector(f"text=Invitation sent to {heir}")

    phone = new_context(browser, phone=True)
    member = phone.new_page()
    member.goto(outbox_link(base_url, heir, "team_invitation", "/team/accept/"))
    member.click("text=Create a sign-in")
    member.fill("input[name=password]", PASSWORD)
    member.fill("input[name=password2]", PASSWORD)
    member.click("button:has-text('Create account')")
    member.click("button:has-text('Accept the invitation')")
    member.wait_for_url(f"{base_url}/overview")

    owner.goto(f"{base_url}/team")
    owner.locator(f"tr[data-member='{heir}'] button:has-text('Hand over')").click()  # confirm() accepted
    owner.wait_for_selector("text=its own sign-in is closed")
    assert "/login" in owner.url
    owner.fill("input[name=email]", owner_email)
    owner.fill("input[name=password]", PASSWORD)
    owner.click("button:has-text('Sign in')")
    owner.wait_for_load_state()
    assert "/login" in owner.url and "/overview" not in owner.url  # the password no longer signs in

    member.goto(f"{base_url}/team")
    assert member.inner_text("#your-role") == "owner"
    assert "account holder" in member.inner_text(f"tr[data-member='{heir}']")
    assert member.locator(f"tr[data-member='{owner_email}']").count() == 0  # its sign-in is no member
    assert member.locator("#leave").count() == 0  # the holder cannot leave: no button
    assert member.evaluate(FITS)
    switch = member.locator("#accounts button:has-text('Act on this account')")  # not cut off at 390 px
    box = switch.bounding_box()
    assert box is not None and box["x"] + box["width"] <= 390
    member.screenshot(path=str(shots / "team-holder-phone.png"), full_page=True)
    desk.close()
    phone.close()
