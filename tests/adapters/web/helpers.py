"""Helpers for driving the dashboard in-process: pull CSRF tokens out of pages, sign up, sign in."""

from __future__ import annotations

import re

import httpx

from tests.support import unique_email

CSRF = re.compile(r'name="csrf" value="([^"]+)"')
PASSWORD = "a long enough password"


def csrf_of(page: httpx.Response) -> str:
    match = CSRF.search(page.text)
    assert match, f"no CSRF field on {page.request.url}"
    return match.group(1)


async def signup(client: httpx.AsyncClient, email: str | None = None, password: str = PASSWORD) -> str:
    email = email or unique_email()
    page = await client.get("/signup")
    r = await client.post(
        "/signup",
        data={
            "csrf": csrf_of(page),
            "email": email,
            "name": "Web User",
            "password": password,
            "password2": password,
        },
    )
    assert r.status_code == 303, r.text
    assert r.headers["location"] == "/overview"
    return email


async def login(client: httpx.AsyncClient, email: str, password: str = PASSWORD) -> httpx.Response:
    page = await client.get("/login")
    return await client.post("/login", data={"csrf": csrf_of(page), "email": email, "password": password})


async def post_form(
    client: httpx.AsyncClient, page_url: str, action: str, data: dict[str, object]
) -> httpx.Response:
    """Open a page, take its CSRF token, post a form to `action`."""
    page = await client.get(page_url)
    assert page.status_code == 200, page.text
    return await client.post(action, data={"csrf": csrf_of(page), **data})


async def follow(client: httpx.AsyncClient, posted: httpx.Response) -> httpx.Response:
    """The page a successful form post redirects to (post/redirect/get)."""
    assert posted.status_code == 303, posted.text
    return await client.get(posted.headers["location"])
