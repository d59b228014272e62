"""The console's upstream pools (issue 36.4): the suppliers per pool with their last health check, a form to
register one, enable / disable and check them (stock.write; the list needs stock.read), and the margin
report per pool (reports.read): what the pool's services sold vs what the suppliers cost. Each form runs a
console-door operation (operator_upstream_add, operator_upstream_set, operator_upstream_check), audited
(the supplier password redacted); the report is operator_upstream_margin. No page shows a password."""

from __future__ import annotations

import uuid
from typing import Any

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from proxyplane.adapters.admin.base import ConsoleRoute, call, form, redirect, render, signed_in
from proxyplane.adapters.admin.catalog import cents
from proxyplane.core.errors import ValidationFailed

router = APIRouter(route_class=ConsoleRoute)
TEXT = ("pool", "scheme", "host", "username", "password", "template", "name", "check_target")


def whole(text: str, what: str) -> int | None:
    text = text.strip()
    if not text:
        return None
    if not text.isdigit():
        raise ValidationFailed(f"{what}: a whole number")
    return int(text)


def size(nbytes: int) -> str:
    """Bytes as the report reads them: decimal units (as sold, core/units.py)."""
    for unit, scale in (("GB", 10**9), ("MB", 10**6), ("kB", 10**3)):
        if nbytes >= scale:
            return f"{nbytes / scale:,.2f} {unit}"
    return f"{nbytes} B"


@router.get("/admin/upstreams")
async def upstreams(request: Request) -> Response:
    await signed_in(request)
    rows = await call(request, "operator_upstream_list", {})
    pools: dict[str, list[dict[str, Any]]] = {}
    for u in rows:
        pools.setdefault(u["pool"], []).append(u)
    return render(request, "upstreams.html", pools=pools)


@router.post("/admin/upstreams")
async def add(request: Request) -> Response:
    await signed_in(request)
    data = await form(request)
    body: dict[str, Any] = {k: str(data.get(k, "") or "").strip() for k in TEXT}
    body["password"] = str(data.get("password", "") or "")  # as typed: spaces may be part of it
    if not body["template"]:
        body["template"] = "{user}"
    if not body["check_target"]:
        del body["check_target"]  # the operation's default
    body["port"] = whole(str(data.get("port", "")), "port")
    body["position"] = whole(str(data.get("position", "")), "position")
    body["cost_per_gb_cents"] = cents(str(data.get("cost_per_gb", "") or "0"), "cost per GB")
    made = await call(request, "operator_upstream_add", body, form_token=str(data.get("form_token", "")))
    return redirect(f"/admin/upstreams?done=added+{made['pool']}+{made['position']}")


@router.post("/admin/upstreams/{upstream_id}/active")
async def active(request: Request, upstream_id: uuid.UUID) -> Response:
    await signed_in(request)
    data = await form(request)
    on = data.get("active") == "on"
    change = {"upstream_id": str(upstream_id), "active": on}
    await call(request, "operator_upstream_set", change, form_token=str(data.get("form_token", "")))
    return redirect(f"/admin/upstreams?done={'enabled' if on else 'disabled'}+{upstream_id}")


@router.post("/admin/upstreams/check")
async def check(request: Request) -> Response:
    """Health-check one supplier (``upstream_id``) or every active one (of ``pool``, or all)."""
    await signed_in(request)
    data = await form(request)
    which: dict[str, Any] = {}
    if data.get("upstream_id"):
        which["upstream_id"] = str(data["upstream_id"])
    elif data.get("pool"):
        which["pool"] = str(data["pool"])
    checked = await call(request, "operator_upstream_check", which)
    up = sum(1 for u in checked if u["health"] == "up")
    return redirect(f"/admin/upstreams?done=checked+{len(checked)}:+{up}+up")


@router.get("/admin/margin")
async def margin(request: Request) -> Response:
    await signed_in(request)
    days = whole(request.query_params.get("days", "") or "30", "days") or 30
    pool = request.query_params.get("pool", "").strip()
    report = await call(request, "operator_upstream_margin", {"days": days, "pool": pool or None})
    return render(request, "margin.html", report=report, days=days, pool=pool, size=size)
