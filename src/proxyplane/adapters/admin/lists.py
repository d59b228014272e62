"""Console list pages (issue 33): orders and services with filters (customer, status, kind, product,
country, ordered between, expiring soon, unpaid). The page turns its query string into the input of the
console-door operation `operator_service_list` and renders the answer."""

from __future__ import annotations

from urllib.parse import urlencode

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from proxyplane.adapters.admin.base import ConsoleRoute, call, render, signed_in

router = APIRouter(route_class=ConsoleRoute)
SERVICE_FILTERS = (
    "customer",
    "status",
    "kind",
    "product_id",
    "country",
    "created_since",
    "created_until",
    "expiring_within_days",
    "unpaid",
)
PAGE = 50


@router.get("/admin/services")
async def services(request: Request) -> Response:
    await signed_in(request)
    sent = {k: request.query_params.get(k, "")[:320] for k in SERVICE_FILTERS}
    data: dict[str, object] = {k: v for k, v in sent.items() if v}
    offset = request.query_params.get("offset", "0")
    data |= {"limit": PAGE, "offset": offset if offset.isdigit() else 0}
    found = await call(request, "operator_service_list", data)
    shown = {k: v for k, v in sent.items() if v}
    more = found["offset"] + len(found["items"]) < found["total"]
    return render(
        request,
        "services.html",
        found=found,
        f=sent,
        next_url=f"/admin/services?{urlencode({**shown, 'offset': found['offset'] + PAGE})}" if more else "",
        statuses=("", "pending", "active", "suspended", "expired", "cancelled"),
    )
