"""The operator console at /admin (issue 33): server-rendered like the customer dashboard, over the
console-door operations of the registry."""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles

from proxyplane.adapters.admin.base import HERE


def install_console(app: FastAPI) -> None:
    from proxyplane.adapters.admin import (
        catalog,
        desk,
        emails,
        lists,
        outbox,
        pages,
        quotas,
        resellers,
        signin,
        upstreams,
        view_as,
    )

    app.mount("/admin/assets", StaticFiles(directory=HERE / "static"), name="admin-assets")
    app.include_router(signin.router, include_in_schema=False)  # pages: not in the customer OpenAPI
    app.include_router(pages.router, include_in_schema=False)
    app.include_router(lists.router, include_in_schema=False)
    app.include_router(outbox.router, include_in_schema=False)  # the email outbox (issue 34)
    app.include_router(catalog.router, include_in_schema=False)
    app.include_router(emails.router, include_in_schema=False)
    app.include_router(desk.router, include_in_schema=False)
    app.include_router(view_as.router, include_in_schema=False)  # the customer's dashboard, read-only
    app.include_router(upstreams.router, include_in_schema=False)  # upstream pools, margin (issue 36.4)
    app.include_router(quotas.router, include_in_schema=False)  # a service's traffic quota (issue 32)
    app.include_router(resellers.router, include_in_schema=False)  # resellers' wallets (issue 33.4)
