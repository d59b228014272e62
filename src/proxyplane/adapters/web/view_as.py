"""An operator's read-only view of a customer's dashboard (issue 33): the link the console follows (or
the CLI prints) hands the view session's token to this browser's view cookie and leaves the address bar
at once; "End view" drops the cookie. What a view may do is decided in base.py (`viewing`): reads only,
secrets masked, no form. Opening a view is the audited operator operation (domains/operators/view_as.py)."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from proxyplane.adapters.web import sessions
from proxyplane.adapters.web.base import WebRoute, error_page, platform_of
from proxyplane.domains.operators.view_as import VIEW_LIFETIME, VIEW_PATH

router = APIRouter(route_class=WebRoute)
HEADERS = {"Cache-Control": "no-store", "Referrer-Policy": "no-referrer"}


@router.get(VIEW_PATH + "{token}", include_in_schema=False)
async def open_view(request: Request, token: str) -> Response:
    """A live view's token becomes this browser's view cookie; an unknown, ended or expired one is a 404
    page (the link is stale), never a cookie that would silently show the browser's own dashboard."""
    if await sessions.live_view(platform_of(request), token) is None:
        page = error_page(request, 404, "View link expired", "This view link is unknown or has expired.")
        page.headers.update(HEADERS)
        return page
    response = RedirectResponse("/overview", status_code=303, headers=HEADERS)
    sessions.set_view_cookie(request, response, token, int(VIEW_LIFETIME.total_seconds()))
    return response


@router.post("/view-as/end", include_in_schema=False)
async def end_view(request: Request) -> Response:
    """Leave the view (no CSRF token: all it does is forget this browser's view cookie)."""
    response = RedirectResponse("/admin/customers", status_code=303, headers=HEADERS)
    sessions.clear_view_cookie(request, response)
    return response
