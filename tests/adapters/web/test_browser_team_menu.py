"""Issue 34.5 in Chromium: the dashboard menu shows a team member only the pages their role can use. A
viewer (390 px phone, the menu behind its button) sees no Buy, API keys or Webhooks; made billing by the
owner (desktop), the next page shows Buy but still no API keys; the owner sees every page. No page
scrolls sideways at either width."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.adapters.web.browser import outbox_link
from tests.adapters.web.test_browser import (  # noqa: F401
    DESKTOP,
    PASSWORD,
    base_url,
    browser,
    new_context,
    shots,
    signed_in_page,
)
from tests.support import unique_email

FITS = "document.documentElement.scrollWidth <= window.innerWidth + 1"
EVERY = ["Overview", "Buy", "Services", "Catalog", "Wallet", "Invoices", "API keys", "Webhooks", "Support"]
EVERY += ["Team", "Profile", "Security"]


def visible_menu(page: Any) -> list[str]:
    """The menu's links a person can see now (on a phone: after opening the menu)."""
    if page.locator("label.navbutton").is_visible():
        if not page.locator("nav.mainnav").is_visible():
            page.click("label.navbutton")
    links = page.locator("nav.mainnav a")
    return [links.nth(i).inner_text() for i in range(links.count()) if links.nth(i).is_visible()]


def test_the_menu_follows_the_members_role(browser: Any, base_url: str, shots: Path) -> None:  # noqa: F811
    desk, owner, _ = signed_in_page(browser, base_url)
    assert visible_menu(owner) == EVERY
    member_email = unique_email()
    owner.goto(f"{base_url}/team")
    owner.fill("#invite input[name=email]", member_email)
    owner.select_option("#invite select[name=role]", "viewer")
    owner.click("button:has-text('Send the invitation')")
    owner.wait_for_selector(f"text=Invitation sent to {member_email}")

    phone = new_context(browser, phone=True)
    member = phone.new_page()
    member.goto(outbox_link(base_url, member_email, "team_invitation", "/team/accept/"))
    member.click("text=Create a sign-in")
    member.fill("input[name=password]", PASSWORD)
    member.fill("input[name=password2]", PASSWORD)
    member.click("button:has-text('Create account')")
    member.click("button:has-text('Accept the invitation')")
    member.wait_for_url(f"{base_url}/overview")
    viewer = visible_menu(member)
    assert viewer == [p for p in EVERY if p not in ("Buy", "API keys", "Webhooks")], viewer
    assert member.evaluate(FITS)
    member.screenshot(path=str(shots / "team-menu-viewer-phone.png"), full_page=True)

    owner.goto(f"{base_url}/team")
    row = owner.locator(f"tr[data-member='{member_email}']")
    row.locator("select").select_option("billing")
    row.locator("button:has-text('Change')").click()
    owner.wait_for_selector("text=The member is now billing")
    assert owner.evaluate(FITS)
    owner.set_viewport_size({"width": 390, "height": 844})  # the owner's member row on a phone: role,
    assert row.locator("button:has-text('Hand over')").is_visible()  # remove and hand-over controls
    assert owner.evaluate(FITS)
    owner.screenshot(path=str(shots / "team-owner-phone.png"), full_page=True)
    owner.set_viewport_size(DESKTOP)

    member.goto(f"{base_url}/wallet")
    billing = visible_menu(member)
    assert billing == [p for p in EVERY if p not in ("API keys", "Webhooks")], billing
    member.set_viewport_size(DESKTOP)  # the same member at desktop width: the menu is shown as is
    member.goto(f"{base_url}/overview")
    assert visible_menu(member) == billing and member.evaluate(FITS)
    member.screenshot(path=str(shots / "team-menu-billing-desktop.png"), full_page=True)
    member.goto(f"{base_url}/keys")  # a hidden page still answers, naming what the role lacks
    assert (
        "customer:write" in member.inner_text("main") or member.locator("form[action='/keys']").count() == 0
    )
    desk.close()
    phone.close()
