"""Issue 34.6 through the real app: the Security page lists the customer's signed-in browsers (browser,
address, signed in, last seen; this one marked) and signs any other out, whose cookie stops working at
once; a reference that is not one of the customer's own sessions (someone else's, or made up) ends
nothing."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

import httpx
import pytest

from tests.adapters.web.helpers import csrf_of, follow, login, signup

pytestmark = pytest.mark.anyio
ENDS = re.compile(r'action="/security/sessions/([0-9a-f]+)/end"')


def browser_at(client: httpx.AsyncClient, ip: str, agent: str) -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=client._transport.app, client=(ip, 40000))  # type: ignore[attr-defined]
    return httpx.AsyncClient(transport=transport, base_url="http://testserver", headers={"user-agent": agent})


@pytest.fixture
async def three(
    client: httpx.AsyncClient,
) -> AsyncIterator[tuple[httpx.AsyncClient, httpx.AsyncClient, httpx.AsyncClient]]:
    async with (
        browser_at(client, "127.0.0.71", "Firefox on a laptop") as laptop,
        browser_at(client, "127.0.0.72", "Safari on a phone") as phone,
        browser_at(client, "127.0.0.73", "Someone else's browser") as stranger,
    ):
        yield laptop, phone, stranger


def rows(page: httpx.Response) -> list[str]:
    section = page.text.split('id="sessions"', 1)[1].split("</section>", 1)[0]
    return section.split("<tbody>", 1)[1].split("</tbody>", 1)[0].split("<tr>")[1:]


async def test_list_the_signed_in_browsers_and_sign_one_out(
    three: tuple[httpx.AsyncClient, httpx.AsyncClient, httpx.AsyncClient],
) -> None:
    laptop, phone, stranger = three
    email = await signup(laptop)
    assert (await login(phone, email)).status_code == 303
    assert (await phone.get("/overview")).status_code == 200
    page = await laptop.get("/security")
    listed = rows(page)
    assert len(listed) == 2
    mine = next(r for r in listed if "127.0.0.71" in r)
    other = next(r for r in listed if "127.0.0.72" in r)
    assert "Firefox on a laptop" in mine and "this browser" in mine and not ENDS.search(mine)
    assert "Safari on a phone" in other and "this browser" not in other and "UTC" in other  # signed in, seen
    ref = ENDS.search(other)
    assert ref is not None

    await signup(stranger)  # another customer cannot end the laptop's sessions, nor can a made-up ref
    security = await stranger.get("/security")
    for bogus in (ref.group(1), "0" * 16):
        refused = await stranger.post(f"/security/sessions/{bogus}/end", data={"csrf": csrf_of(security)})
        assert refused.status_code == 404
    assert (await phone.get("/overview")).status_code == 200

    ended = await laptop.post(f"/security/sessions/{ref.group(1)}/end", data={"csrf": csrf_of(page)})
    after = await follow(laptop, ended)
    assert "That browser is signed out." in after.text
    assert [("127.0.0.71" in r, "this browser" in r) for r in rows(after)] == [(True, True)]
    gone = await phone.get("/overview")
    assert gone.status_code == 303 and gone.headers["location"].startswith("/login")
    assert (await laptop.get("/overview")).status_code == 200  # this browser stays signed in
