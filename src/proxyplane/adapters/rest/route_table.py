"""A dict of (method, path) -> route in front of the app router's linear walk (issue 15: HTTP CPU).

Starlette finds a request's route by trying every route's regex in order (~70 here: ~60 `matches` calls
for an order, the largest single cost of the HTTP layer). Most requests name a route without a path
parameter, so the answer can be looked up: the table holds each such path and method whose linear walk,
simulated once when the table is built, ends on that very route (a route earlier in the list that
would take the path, a parameter route or a mount, keeps the path out of the table). Everything else,
and every scope the simulation cannot stand for, takes the walk as before.

The walk is simulated only over routes whose match depends on the path and method alone (Starlette's
Route and Mount and FastAPI's APIRoute); the first route of another kind ends the table there. The table
is rebuilt when the route list changes (its length or its ends)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from fastapi.routing import _update_scope
from fastapi.telemetry._api import _route_selected
from starlette._utils import get_route_path
from starlette.routing import Match, Mount, Route, Router

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def walk(routes: list[Any], method: str, path: str) -> Any | None:
    """The route Starlette's walk gives `method path` (the first full match), or None."""
    scope = {
        "type": "http",
        "method": method,
        "path": path,
        "root_path": "",
        "headers": [],
        "query_string": b"",
    }
    for route in routes:
        match, _ = route.matches(scope)
        if match == Match.FULL:
            return route
    return None


def build(routes: list[Any]) -> dict[tuple[str, str], Any]:
    """(method, path) -> route for every parameterless route its own walk ends on."""
    known: list[Any] = []
    for route in routes:
        if type(route) is not Mount and not isinstance(route, Route):
            break  # a Host, an included router, a frontend route: its match is not the path's alone
        known.append(route)
    table: dict[tuple[str, str], Any] = {}
    for candidate in known:
        if type(candidate) is Mount or candidate.param_convertors or not candidate.methods:
            continue
        for method in candidate.methods:
            key = (method, candidate.path)
            if key not in table and walk(known, method, candidate.path) is candidate:
                table[key] = candidate
    return table


class RouteTable:
    """The router's own app (router.middleware_stack), a dict lookup before the walk."""

    def __init__(self, router: Router) -> None:
        self.router = router
        self.walk: ASGIApp = router.middleware_stack
        self.table: dict[tuple[str, str], Any] = {}
        self.shape: tuple[int, int, int] = (-1, 0, 0)

    def _current(self) -> dict[tuple[str, str], Any]:
        routes = self.router.routes
        shape = (len(routes), id(routes[0]) if routes else 0, id(routes[-1]) if routes else 0)
        if shape != self.shape:
            usable = not getattr(self.router, "form_limits", None)  # the walk would put them in the scope
            self.table = build(list(routes)) if usable else {}
            self.shape = shape
        return self.table

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            route = self._current().get((scope["method"], get_route_path(scope)))
            if route is not None:
                match, child_scope = route.matches(scope)
                if match == Match.FULL:  # as the walk does on its first full match
                    if "router" not in scope:
                        scope["router"] = self.router
                    _update_scope(scope, child_scope)
                    _route_selected(scope=scope, path=route.path_format, mount=False)
                    await route.handle(scope, receive, send)
                    return
        await self.walk(scope, receive, send)


def install(router: Router) -> None:
    """Put the table in front of `router`'s walk (once)."""
    if not isinstance(router.middleware_stack, RouteTable):
        router.middleware_stack = RouteTable(router)
