"""The customer page's "View as customer" button (issue 33): the console-door operation
`operator_customer_view_as` opens a read-only dashboard view of the customer (audited) and the browser
follows its link, which hands the view to the dashboard's own cookie; the link itself is shown nowhere."""

from __future__ import annotations

from urllib.parse import urlsplit

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from proxyplane.adapters.admin.base import ConsoleRoute, call, form, redirect, signed_in

router = APIRouter(route_class=ConsoleRoute)


@router.post("/admin/customers/{customer_id}/view-as")
async def view_as(request: Request, customer_id: int) -> Response:
    await signed_in(request)
    data = await form(request)
    opened = await call(
        request,
        "operator_customer_view_as",
        {"customer_id": customer_id},
        form_token=str(data.get("form_token", "")),
    )
    return redirect(urlsplit(opened["view_url"]).path)  # this host, whatever the public address says
