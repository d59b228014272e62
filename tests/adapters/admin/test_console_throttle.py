"""Sign-in to the console is throttled through the app (issue 33, item 1): after the password bucket's
burst of wrong passwords from one address, the right one is refused too ("Too many attempts"); after the
code bucket's burst of wrong TOTP codes, the right code is refused too, and no session is let in."""

from __future__ import annotations

import httpx
import pytest

from proxyplane.domains.accounts.throttle import PASSWORD_ACCOUNT_ADDRESS, TOTP_CODE
from proxyplane.platform import Platform
from tests.adapters.admin.test_console import csrf, sign_in
from tests.domains.operators.helpers import code_now

pytestmark = pytest.mark.anyio
PASSWORD = "console-password-1"  # what sign_in sets at enrolment


async def sign_out(client: httpx.AsyncClient) -> None:
    page = await client.get("/admin")
    await client.post("/admin/logout", data={"csrf": csrf(page.text)})


async def post_password(client: httpx.AsyncClient, email: str, password: str) -> httpx.Response:
    page = await client.get("/admin/login")
    return await client.post(
        "/admin/login", data={"csrf": csrf(page.text), "email": email, "password": password}
    )


async def test_wrong_passwords_then_the_right_one_is_throttled(
    client: httpx.AsyncClient, platform: Platform
) -> None:
    email, _ = await sign_in(client, platform, "viewer")
    await sign_out(client)
    for _ in range(PASSWORD_ACCOUNT_ADDRESS.burst):
        wrong = await post_password(client, email, "not-the-password")
        assert wrong.status_code == 401 and "Wrong email, password or code." in wrong.text
    right = await post_password(client, email, PASSWORD)
    assert right.status_code == 401 and "Too many attempts" in right.text
    assert (await client.get("/admin")).headers["location"] == "/admin/login"


async def test_wrong_codes_then_the_right_one_is_throttled(
    client: httpx.AsyncClient, platform: Platform
) -> None:
    email, secret = await sign_in(client, platform, "viewer")
    await sign_out(client)
    assert (await post_password(client, email, PASSWORD)).headers["location"] == "/admin/totp"
    form = await client.get("/admin/totp")
    for _ in range(TOTP_CODE.burst):
        wrong = await client.post("/admin/totp", data={"csrf": csrf(form.text), "code": "000000"})
        assert wrong.status_code == 401 and "Wrong email, password or code." in wrong.text
    late = await client.post("/admin/totp", data={"csrf": csrf(form.text), "code": code_now(secret, 1)})
    assert late.status_code == 401 and "Too many attempts" in late.text
    assert (await client.get("/admin")).headers["location"] == "/admin/totp"  # still not signed in
