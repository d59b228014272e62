"""The customer web dashboard, served at `/` by the control-plane app."""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.routing import APIRoute
from fastapi.staticfiles import StaticFiles
from starlette.requests import Request
from starlette.responses import FileResponse, Response

from proxyplane.adapters.web.base import HERE


def install_dashboard(app: FastAPI) -> None:
    """Add the dashboard pages and their static files (CSS, JS) to the app."""
    from proxyplane.adapters.web import (
        account,
        billing_pages,
        buy,
        consent,
        keys,
        mail_pages,
        money_pages,
        service_tools,
        services,
        subusers,
        team_pages,
        tickets,
        traffic,
        two_factor_pages,
        view_as,
        webhooks,
    )

    app.mount("/assets", StaticFiles(directory=HERE / "static"), name="web-assets")
    app.add_route("/favicon.ico", favicon, methods=["GET", "HEAD"], include_in_schema=False)
    pages: set[str] = set()
    for module in (
        account,
        money_pages,
        keys,
        consent,
        billing_pages,
        buy,
        services,
        service_tools,
        traffic,  # issue 32: add traffic, auto top-up
        subusers,
        tickets,
        webhooks,
        mail_pages,  # issue 34: emailed links, unsubscribe, notification settings
        two_factor_pages,  # issue 34: the sign-in code step, two-factor, app passwords
        team_pages,  # issue 34.5: team members, invitations, the activity log
        view_as,  # issue 33: an operator's read-only view of the dashboard
    ):
        app.include_router(module.router)
        pages.update(
            r.path for r in module.router.routes if isinstance(r, APIRoute) and "GET" in (r.methods or ())
        )
    app.state.web_pages = frozenset(pages)


async def favicon(request: Request) -> Response:
    """/favicon.ico, which browsers ask for on every page of the app (the API docs and checkout too);
    the dashboard's pages also link the SVG one."""
    headers = {"Cache-Control": "public, max-age=86400"}
    return FileResponse(HERE / "static" / "favicon.ico", media_type="image/x-icon", headers=headers)
