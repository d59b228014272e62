"""Issue 34 in a real browser: sign up -> confirm the address from the emailed link -> turn on two-factor
sign-in (QR code, first code, 10 recovery codes) -> sign in with a code -> sign in with a recovery code
(used once); forgot password -> reset link -> the other browser is signed out (and gone from the Security
page's list of signed-in browsers, which stacks on a 390 px phone), the link works once."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pyotp

from tests.adapters.web.browser import outbox_link
from tests.adapters.web.test_browser import PASSWORD, base_url, browser, shots, sign_up  # noqa: F401


def test_sign_up_verify_two_factor_code_and_recovery_code(browser: Any, base_url: str, shots: Path) -> None:  # noqa: F811
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    email = sign_up(page, base_url)  # opens the verification link from the outbox
    assert "is confirmed" in page.inner_text(".flash")
    page.goto(f"{base_url}/security")
    assert "confirmed" in page.inner_text("#email")
    page.click("button:has-text('Turn on two-factor sign-in')")
    page.wait_for_selector(".qr svg")
    page.screenshot(path=str(shots / "two-factor-setup.png"), full_page=True)
    otp = pyotp.TOTP(page.inner_text("#totp-secret").strip())
    page.fill("input[name=code]", otp.now())
    page.click("button:has-text('Turn on')")
    page.wait_for_selector("#recovery-codes")
    codes = [c.strip() for c in page.locator("#recovery-codes li").all_inner_texts()]
    assert len(codes) == 10 == len(set(codes))
    page.screenshot(path=str(shots / "recovery-codes.png"), full_page=True)
    page.click("text=Done")
    assert "on" in page.inner_text("#two-factor") and page.inner_text("#codes-left") == "10"

    page.click("button:has-text('Sign out')")
    page.wait_for_url(f"{base_url}/login")
    page.fill("input[name=email]", email)
    page.fill("input[name=password]", PASSWORD)
    page.click("button:has-text('Sign in')")
    page.wait_for_selector("text=Enter your code")
    page.screenshot(path=str(shots / "sign-in-code.png"), full_page=True)
    page.fill("input[name=code]", "000000" if otp.now() != "000000" else "111111")
    page.click("button:has-text('Sign in')")
    assert "not right" in page.inner_text(".error")
    page.fill("input[name=code]", otp.at(time.time() + 30))  # the next step (the first code was used)
    page.click("button:has-text('Sign in')")
    page.wait_for_url(f"{base_url}/overview")

    page.click("button:has-text('Sign out')")
    page.wait_for_url(f"{base_url}/login")
    for attempt in range(2):  # a recovery code signs in once
        page.goto(f"{base_url}/login")
        page.fill("input[name=email]", email)
        page.fill("input[name=password]", PASSWORD)
        page.click("button:has-text('Sign in')")
        page.wait_for_selector("text=Enter your code")
        page.fill("input[name=code]", codes[0])
        page.click("button:has-text('Sign in')")
        if attempt == 0:
            page.wait_for_url(f"{base_url}/overview")
            page.goto(f"{base_url}/security")
            assert page.inner_text("#codes-left") == "9"
            page.click("button:has-text('Sign out')")
            page.wait_for_url(f"{base_url}/login")
        else:
            assert "not right" in page.inner_text(".error")
    context.close()


def test_forgot_password_reset_ends_other_sessions(browser: Any, base_url: str, shots: Path) -> None:  # noqa: F811
    other = browser.new_context(viewport={"width": 1280, "height": 900})
    elsewhere = other.new_page()
    email = sign_up(elsewhere, base_url)  # signed in in another browser
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.goto(f"{base_url}/login")
    page.click("text=Forgot your password?")
    page.fill("input[name=email]", email)
    page.click("button:has-text('Send me a reset link')")
    page.wait_for_selector("#sent")
    assert "If an account uses that address" in page.inner_text("#sent")
    reset = outbox_link(base_url, email, "reset_password", "/reset-password/")
    page.goto(reset)
    page.fill("input[name=new_password]", "a new browser password")
    page.fill("input[name=new_password2]", "a new browser password")
    page.screenshot(path=str(shots / "reset-password.png"), full_page=True)
    page.click("button:has-text('Set the new password')")
    page.wait_for_url(f"{base_url}/login")
    assert "every browser signed out" in page.inner_text(".flash")
    elsewhere.goto(f"{base_url}/overview")  # the other browser's session ended
    elsewhere.wait_for_url(re.compile(r".*/login\?next=.*"))
    page.goto(reset)  # the link worked once
    assert "already used" in page.inner_text("#link-result")
    page.screenshot(path=str(shots / "link-used.png"), full_page=True)
    page.goto(f"{base_url}/login")
    page.fill("input[name=email]", email)
    page.fill("input[name=password]", "a new browser password")
    page.click("button:has-text('Sign in')")
    page.wait_for_url(f"{base_url}/overview")
    page.goto(f"{base_url}/security")  # the signed-in browsers: this one only, the other one ended
    rows = page.locator("#sessions tbody tr")
    assert rows.count() == 1 and "this browser" in rows.first.inner_text()
    page.set_viewport_size({"width": 390, "height": 900})
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")
    page.screenshot(path=str(shots / "sessions-after-reset-phone.png"), full_page=True)
    context.close()
    other.close()
