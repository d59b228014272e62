"""Dashboard accounts: sign up, CSRF, throttling, sessions, password change, login history."""

from __future__ import annotations

import uuid

import httpx
import pytest

from proxyplane.platform import Platform
from tests.adapters.web.helpers import PASSWORD, csrf_of, follow, login, post_form, signup
from tests.support import unique_email

pytestmark = pytest.mark.anyio


def client_from(platform: Platform, ip: str) -> httpx.AsyncClient:
    from proxyplane.app import create_app

    transport = httpx.ASGITransport(app=create_app(platform), client=(ip, 50000))
    return httpx.AsyncClient(transport=transport, base_url="http://testserver")


def fresh_ip() -> str:
    raw = uuid.uuid4().bytes
    return f"127.{raw[0]}.{raw[1]}.{max(raw[2], 1)}"


async def test_signup_signs_in_and_sets_safe_cookie(client: httpx.AsyncClient) -> None:
    email = await signup(client)
    cookie = next(h for h in client.cookies.jar if h.name == "pp_session")
    assert cookie.has_nonstandard_attr("HttpOnly")
    page = await client.get("/overview")
    assert page.status_code == 200
    assert email in page.text
    assert "Content-Security-Policy" in page.headers


async def test_signup_cookie_is_secure_over_https(platform: Platform) -> None:
    from proxyplane.app import create_app

    transport = httpx.ASGITransport(app=create_app(platform), client=("127.0.0.9", 50000))
    async with httpx.AsyncClient(transport=transport, base_url="https://testserver") as c:
        page = await c.get("/signup")
        r = await c.post(
            "/signup",
            data={
                "csrf": csrf_of(page),
                "email": unique_email(),
                "password": PASSWORD,
                "password2": PASSWORD,
            },
        )
    assert r.status_code == 303
    header = r.headers["set-cookie"].lower()
    assert (
        "pp_session=" in header and "secure" in header and "httponly" in header and "samesite=lax" in header
    )


async def test_signup_password_usable_for_api_domain_login(
    client: httpx.AsyncClient, platform: Platform
) -> None:
    from proxyplane.domains.accounts.logins import sign_in

    email = await signup(client)
    async with platform.db.unit_of_work() as uow:
        assert await sign_in(uow.session, email, PASSWORD, "legacy", "127.0.0.1", "t") is not None
        assert await sign_in(uow.session, email, "wrong password!", "legacy", "127.0.0.1", "t") is None


async def test_signup_errors_are_shown_next_to_the_field(client: httpx.AsyncClient) -> None:
    email = await signup(client)
    client.cookies.clear()
    page = await client.get("/signup")
    r = await client.post(
        "/signup", data={"csrf": csrf_of(page), "email": email, "password": PASSWORD, "password2": PASSWORD}
    )
    assert r.status_code == 409
    assert "already exists" in r.text
    short = await client.post(
        "/signup",
        data={"csrf": csrf_of(page), "email": unique_email(), "password": "short", "password2": "short"},
    )
    assert short.status_code == 422
    assert "at least 8 characters" in short.text


async def test_forms_without_csrf_token_are_refused(client: httpx.AsyncClient) -> None:
    r = await client.post(
        "/signup", data={"email": unique_email(), "password": PASSWORD, "password2": PASSWORD}
    )
    assert r.status_code == 403
    email = await signup(client)
    bad = await client.post("/profile", data={"csrf": "forged", "name": "Mallory"})
    assert bad.status_code == 403
    assert "Traceback" not in bad.text
    profile = await client.get("/profile")
    assert "Mallory" not in profile.text and email in profile.text


async def test_login_wrong_password_then_right(platform: Platform) -> None:
    async with client_from(platform, fresh_ip()) as c:
        email = await signup(c)
        await post_form(c, "/overview", "/logout", {})
        wrong = await login(c, email, "not the password")
        assert wrong.status_code == 401
        assert "Wrong email or password" in wrong.text
        right = await login(c, email, PASSWORD)
        assert right.status_code == 303
        assert (await c.get("/overview")).status_code == 200


async def test_logout_invalidates_the_session_record(client: httpx.AsyncClient) -> None:
    await signup(client)
    token = client.cookies["pp_session"]
    r = await post_form(client, "/overview", "/logout", {})
    assert r.status_code == 303
    client.cookies.clear()
    client.cookies.set("pp_session", token)  # a copy of the old cookie no longer works
    again = await client.get("/wallet")
    assert again.status_code == 303
    assert again.headers["location"].startswith("/login?next=")


async def test_password_change_ends_other_sessions(platform: Platform) -> None:
    ip = fresh_ip()
    async with client_from(platform, ip) as first, client_from(platform, ip) as second:
        email = await signup(first)
        assert (await login(second, email)).status_code == 303
        new = "a brand new password"
        r = await post_form(
            first,
            "/security",
            "/security/password",
            {"current_password": PASSWORD, "new_password": new, "new_password2": new},
        )
        assert r.status_code == 303
        assert (await first.get("/security")).status_code == 200  # this browser got a fresh session
        assert (await second.get("/security")).status_code == 303  # the other one is signed out
        second.cookies.clear()
        assert (await login(second, email, PASSWORD)).status_code == 401
        assert (await login(second, email, new)).status_code == 303


async def test_password_change_wrong_current_shows_error(client: httpx.AsyncClient) -> None:
    await signup(client)
    r = await post_form(
        client,
        "/security",
        "/security/password",
        {"current_password": "nope nope nope", "new_password": "x" * 10, "new_password2": "x" * 10},
    )
    assert r.status_code == 422
    assert "current password is not correct" in r.text


async def test_current_password_checks_share_the_sign_in_throttle(platform: Platform) -> None:
    """Issue 30.2: a signed-in browser (a stolen session cookie) cannot guess the current password at will:
    the password change, the email change and turning 2FA off check it behind the sign-in's throttle."""
    async with client_from(platform, fresh_ip()) as c:
        await signup(c)
        wrong = {"current_password": "nope nope nope", "new_password": "x" * 10, "new_password2": "x" * 10}
        codes = [(await post_form(c, "/security", "/security/password", wrong)).status_code for _ in range(6)]
        assert codes[:5] == [422] * 5 and codes[5] == 429, codes
        right = {"current_password": PASSWORD, "new_password": "x" * 10, "new_password2": "x" * 10}
        r = await post_form(c, "/security", "/security/password", right)
        assert r.status_code == 429 and "Too many wrong passwords" in r.text  # nothing verified meanwhile
        moved = {"current_password": PASSWORD, "new_email": f"moved-{fresh_ip()}@example.com"}
        r = await post_form(c, "/security", "/security/email", moved)
        assert r.status_code == 429 and "Too many wrong passwords" in r.text
        assert (await c.get("/security")).status_code == 200  # still signed in: slowed, never locked out


async def test_login_history_in_page_and_api(platform: Platform) -> None:
    from tests.support import bearer

    ip = fresh_ip()
    async with client_from(platform, ip) as c:
        email = await signup(c)
        c.cookies.clear()
        await login(c, email, "wrong wrong wrong")
        await login(c, email, PASSWORD)
        page = await c.get("/security")
        assert page.status_code == 200
        assert ip in page.text and "failed" in page.text
        r = await follow(
            c, await post_form(c, "/keys", "/keys", {"name": "history", "scopes": ["customer:read"]})
        )
        secret = r.text.split('id="secret">')[1].split("<")[0]
        api = await c.get("/api/v1/customer/me/login-history", headers=bearer(secret))
    assert api.status_code == 200
    body = api.json()
    assert body["total"] == 3
    assert [e["success"] for e in body["items"]] == [True, False, True]
    assert {e["client_ip"] for e in body["items"]} == {ip}
    assert body["items"][0]["channel"] == "web"


async def test_next_parameter_only_allows_local_paths(client: httpx.AsyncClient) -> None:
    email = await signup(client)
    await post_form(client, "/overview", "/logout", {})
    page = await client.get("/login?next=//evil.example/")
    r = await client.post(
        "/login",
        data={"csrf": csrf_of(page), "email": email, "password": PASSWORD, "next": "//evil.example/"},
    )
    assert r.status_code == 303
    assert r.headers["location"] == "/"
