"""The HTTP layer's shortcuts (issue 15) answer exactly as the way they skip: the (method, path) route
table gives the route Starlette's linear walk gives, and an operation's fast path (fast.py) gives the
status, body and headers FastAPI's own handler gives, for good requests and every kind of bad one."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from proxyplane.adapters.rest import route_table
from proxyplane.adapters.rest.fast import FastOperation
from proxyplane.app import create_app
from proxyplane.platform import Platform
from tests.support import Account, bearer

pytestmark = pytest.mark.anyio

QUOTE = "/api/v1/billing/composite/quote"
GOOD = {"product_kind": "proxy_datacenter", "period_months": 1, "segments": [{"country": "US", "count": 2}]}


@pytest.fixture
async def app(platform: Platform) -> Any:
    return create_app(platform)


@pytest.fixture
async def http(app: Any) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=app, client=("127.0.0.9", 50000))
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
        yield c


async def test_route_table_gives_the_walks_route_for_every_registered_path(app: Any) -> None:
    routes = app.router.routes
    table = app.router.middleware_stack._current()
    assert ("POST", "/api/v1/billing/composite/order") in table
    assert ("GET", "/api/v1/customer/wallet/balance") in table
    for (method, path), route in table.items():
        assert route_table.walk(routes, method, path) is route, (method, path)
    paths = app.openapi()["paths"]
    for path, item in paths.items():  # every documented path, parameters given a sample value
        sample = path.replace("{", "").replace("}", "")
        for method in item:
            found = table.get((method.upper(), sample))
            assert found is None or found is route_table.walk(routes, method.upper(), sample), (method, path)


async def test_a_route_added_after_the_first_request_is_routed(app: Any, http: httpx.AsyncClient) -> None:
    assert (await http.get("/livez")).status_code == 200

    async def late(_: Any) -> Any:
        from starlette.responses import PlainTextResponse

        return PlainTextResponse("late")

    app.router.add_route("/late-path", late, methods=["GET"])
    r = await http.get("/late-path")
    assert (r.status_code, r.text) == (200, "late")


def _fast_routes(app: Any) -> list[FastOperation]:
    return [r.app for r in app.router.routes if isinstance(getattr(r, "app", None), FastOperation)]


async def _both_ways(app: Any, http: httpx.AsyncClient, method: str, path: str, **kw: Any) -> httpx.Response:
    """The request with the fast path on, then off (FastAPI's handler): the same answer, byte for byte."""
    fast = _fast_routes(app)
    answers = []
    for on in (True, False):
        for f in fast:
            f.enabled = on and f.usable
        answers.append(await http.request(method, path, **kw))
    for f in fast:
        f.enabled = f.usable
    quick, slow = answers
    assert quick.status_code == slow.status_code, (path, kw, quick.text, slow.text)
    assert quick.content == slow.content, (path, kw)
    seen = {k: v for k, v in quick.headers.items() if k != "x-request-id"}
    assert seen == {k: v for k, v in slow.headers.items() if k != "x-request-id"}
    return quick


async def test_fast_path_answers_as_fastapi(app: Any, http: httpx.AsyncClient, account: Account) -> None:
    served = {f.op.name for f in _fast_routes(app) if f.usable}
    assert {"quote_composite", "order_composite", "get_balance", "list_invoices"} <= served
    key = await account.key()
    auth = bearer(key)
    json_type = {"content-type": "application/json"}
    cases: list[tuple[str, str, dict[str, Any], int]] = [
        ("POST", QUOTE, {"json": GOOD}, 200),
        ("POST", QUOTE, {"json": GOOD, "headers": auth}, 200),
        ("POST", QUOTE, {"json": {**GOOD, "surprise": 1}, "headers": auth}, 422),
        ("POST", QUOTE, {"json": {**GOOD, "period_months": "one"}}, 422),
        ("POST", QUOTE, {"content": b"{", "headers": json_type}, 422),
        ("POST", QUOTE, {"content": b"", "headers": json_type}, 422),
        ("POST", QUOTE, {"content": b"\xff\xfe", "headers": json_type}, 422),
        ("POST", QUOTE, {"content": b'{"a": NaN}', "headers": json_type}, 422),
        ("POST", QUOTE, {"content": b"[1]", "headers": json_type}, 422),
        ("POST", QUOTE, {"json": GOOD, "headers": {"authorization": "Bearer ppk_nope"}}, 401),
        ("POST", QUOTE, {"json": {}, "headers": {"authorization": "Bearer ppk_nope"}}, 422),
        ("POST", QUOTE, {"content": b'{"x": 1}', "headers": {"content-type": "text/plain"}}, 422),
        ("POST", QUOTE, {"json": GOOD, "headers": {"content-type": "application/json; charset=utf-8"}}, 200),
        ("POST", QUOTE + "?extra=1", {"json": GOOD}, 200),
        ("GET", "/api/v1/customer/wallet/balance", {"headers": auth}, 200),
        ("GET", "/api/v1/customer/wallet/balance?x=1", {"headers": auth}, 200),
        ("GET", "/api/v1/customer/wallet/balance", {}, 401),
        ("GET", "/api/v1/customer/wallet/balance", {"headers": {"authorization": "Basic abc"}}, 401),
        ("GET", "/api/v1/customer/me", {"headers": auth}, 200),
        ("GET", "/api/v1/customer/invoices", {"headers": auth}, 200),
        ("GET", "/api/v1/customer/invoices?limit=0", {"headers": auth}, 422),
        ("GET", "/api/v1/customer/services", {"headers": auth}, 200),
        ("POST", "/api/v1/customer/wallet/balance", {"headers": auth}, 405),
        ("POST", "/api/v1/billing/composite/order", {"json": {"period_months": 1}, "headers": auth}, 422),
    ]
    ticket = await http.post(
        "/api/v1/customer/tickets", json={"subject": "fast", "message": "path"}, headers=auth
    )
    assert ticket.status_code == 201, ticket.text
    ticket_path = "/api/v1/customer/tickets/" + str(ticket.json()["ticket_id"])
    cases.append(("GET", ticket_path, {"headers": auth}, 200))  # path parameters only: the fast path too
    for method, path, kw, status in cases:
        r = await _both_ways(app, http, method, path, **kw)
        assert r.status_code == status, (method, path, kw, r.text)


async def test_every_fast_route_refuses_as_fastapi(
    app: Any, http: httpx.AsyncClient, account: Account
) -> None:
    """Every registry route the fast path serves: a body that is no input model (a JSON array, broken
    JSON), for a key-only read no key, and path values that name nothing or cannot be an id: the same
    answer both ways."""
    import re

    from proxyplane.ops import Auth

    auth = bearer(await account.key())

    routes = [f for f in _fast_routes(app) if f.usable]
    assert len(routes) > 20
    for f in routes:
        path = "/api/v1" + f.op.path
        if f.body_model is not None:
            for body in (b"[]", b"{"):
                r = await _both_ways(
                    app, http, f.op.method, path, content=body, headers={"content-type": "application/json"}
                )
                assert r.status_code == 422, (path, body, r.text)
        elif f.path_names:
            named = re.sub(r"{\w+}", "0", path)  # not found, or no valid id (a UUID's)
            r = await _both_ways(app, http, f.op.method, named, headers=auth)
            assert r.status_code in (404, 405, 422), (named, r.text)
        elif f.op.auth == Auth.KEY:
            r = await _both_ways(app, http, f.op.method, path)
            assert r.status_code == 401, (path, r.text)
