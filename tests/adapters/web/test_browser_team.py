"""Issue 34.5 in a real browser: the owner (desktop) invites a billing member from /team; the invited person
(a 390 px phone) opens the emailed link, creates their own sign-in, accepts, tops up the account's wallet
but cannot create an API key; the owner sees them and their top-up in the activity log, removes them, and
the member's browser is signed out. No team page scrolls sideways at either width."""

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


def test_invite_billing_member_top_up_no_keys_then_remove(browser: Any, base_url: str, shots: Path) -> None:  # noqa: F811
    desk, owner, owner_email = signed_in_page(browser, base_url)
    owner.click("nav.mainnav >> text=Team")
    member_email = unique_email()
    owner.fill("#invite input[name=email]", member_email)
    owner.select_option("#invite select[name=role]", "billing")
    owner.click("button:has-text('Send the invitation')")
    owner.wait_for_selector(f"text=Invitation sent to {member_email}")
    assert "billing" in owner.inner_text(f"tr[data-invitation='{member_email}']")
    assert owner.evaluate(FITS)
    owner.screenshot(path=str(shots / "team-owner.png"), full_page=True)

    phone = new_context(browser, phone=True)
    member = phone.new_page()
    link = outbox_link(base_url, member_email, "team_invitation", "/team/accept/")
    member.goto(link)
    assert "billing" in member.inner_text("#invitation") and member.evaluate(FITS)
    member.screenshot(path=str(shots / "team-invitation-phone.png"), full_page=True)
    member.click("text=Create a sign-in")
    assert member.input_value("input[name=email]") == member_email
    member.fill("input[name=password]", PASSWORD)
    member.fill("input[name=password2]", PASSWORD)
    member.click("button:has-text('Create account')")
    member.wait_for_selector("button:has-text('Accept the invitation')")
    member.click("button:has-text('Accept the invitation')")
    member.wait_for_url(f"{base_url}/overview")
    assert f"on {owner_email}" in member.inner_text("#acting") and "billing" in member.inner_text("#acting")

    member.goto(f"{base_url}/wallet")
    member.fill("input[name=amount]", "15")
    member.check("input[value=card]")
    member.click("button:has-text('Continue to payment')")
    member.wait_for_url(f"{base_url}/checkout/test/**")  # the account's deposit, at the test processor
    member.click("button:has-text('Pay')")
    member.wait_for_selector("text=Payment paid")
    member.goto(f"{base_url}/wallet")
    assert member.inner_text("#balance") == "$15.00"  # the account's wallet
    member.goto(f"{base_url}/keys")
    member.fill("input[name=name]", "billing key")
    member.check("input[value='wallet:read']")
    member.click("button:has-text('Create key')")
    assert "customer:write" in member.inner_text("main")
    member.goto(f"{base_url}/team")
    assert member.inner_text("#your-role") == "billing" and member.evaluate(FITS)
    assert member.locator("#invite").count() == 0  # billing manages no members
    member.screenshot(path=str(shots / "team-member-phone.png"), full_page=True)

    owner.goto(f"{base_url}/overview")
    assert owner.inner_text("#balance") == "$15.00"
    owner.goto(f"{base_url}/team")
    row = owner.locator(f"tr[data-member='{member_email}']")
    assert "billing" in row.inner_text() or row.locator("select").input_value() == "billing"
    assert member_email in owner.inner_text("#activity") and "init_deposit" in owner.inner_text("#activity")
    row.locator("button:has-text('Remove')").click()
    owner.wait_for_selector("text=Member removed")
    assert owner.locator(f"tr[data-member='{member_email}']").count() == 0

    member.goto(f"{base_url}/overview")
    member.wait_for_url(f"{base_url}/login**")  # its session on the account ended
    desk.close()
    phone.close()
