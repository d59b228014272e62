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
    await verify_email(client, email)
    return email


async def verify_email(client: httpx.AsyncClient, email: str) -> None:
    """Open the verification link the sign-up queued (issue 34: buying waits for it), read from the
    app's outbox as the operator would with no SMTP configured."""
    from sqlalchemy import select

    from proxyplane.storage.models.mail import EmailMessage

    platform = client._transport.app.state.platform  # type: ignore[attr-defined]
    async with platform.db.unit_of_work(write=False) as uow:
        text = (
            await uow.session.execute(
                select(EmailMessage.text_body)
                .where(EmailMessage.to_address == email, EmailMessage.kind == "verify_email")
                .order_by(EmailMessage.id.desc())
                .limit(1)
            )
        ).scalar_one()
    link = re.search(r"https?://[^/\s]+(/verify-email/\S+)", text)
    assert link, text
    assert (await client.get(link.group(1))).status_code == 303


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
