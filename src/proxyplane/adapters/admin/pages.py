"""Console pages (issue 33): overview, customers (search, a customer's page with credit / debit /
suspend / resume / refund), the tickets inbox (reply, close), the audit log (filters, CSV), one's own
sessions. Each page runs the console-door operation of the same name through `invoke`."""

from __future__ import annotations

import csv
import io
import json
import uuid

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from proxyplane.adapters.admin.base import ConsoleRoute, call, form, redirect, render, signed_in
from proxyplane.domains.operators.roles import RESELLER

router = APIRouter(route_class=ConsoleRoute)
ACTIONS = {
    "suspend": "operator_service_suspend",
    "resume": "operator_service_resume",
    "refund": "operator_service_refund",
}
AUDIT_FIELDS = ("actor", "action", "target", "outcome", "since", "until")


@router.get("/admin")
async def overview(request: Request) -> Response:
    who = await signed_in(request)
    if who.role == RESELLER:  # a reseller's home: its wallet (it has no overview)
        return redirect("/admin/reseller")
    data = await call(request, "operator_overview", {})
    peak = max([d["cents"] for d in data["revenue_by_day"]] + [1])
    return render(request, "overview.html", o=data, peak=peak)


@router.get("/admin/customers")
async def customers(request: Request) -> Response:
    await signed_in(request)
    q = request.query_params.get("q", "")[:200]
    found = await call(request, "operator_customer_search", {"query": q})
    return render(request, "customers.html", q=q, customers=found["customers"])


@router.get("/admin/customers/{customer_id}")
async def customer(request: Request, customer_id: int) -> Response:
    await signed_in(request)
    page = await call(request, "operator_customer_view", {"customer_id": customer_id})
    return render(request, "customer.html", c=page)


@router.post("/admin/customers/{customer_id}/wallet")
async def wallet_move(request: Request, customer_id: int) -> Response:
    await signed_in(request)
    data = await form(request)
    page = await call(request, "operator_customer_view", {"customer_id": customer_id})
    name = "operator_wallet_debit" if data.get("direction") == "debit" else "operator_wallet_credit"
    try:
        cents = round(float(str(data.get("amount", "0"))) * 100)
    except ValueError:
        cents = 0
    move = {"email": page["email"], "cents": cents, "reason": str(data.get("reason", "")).strip()}
    if cents <= 0 or not move["reason"]:
        return render(
            request, "customer.html", status=422, c=page, error="Give a positive amount and a reason."
        )
    await call(request, name, move, form_token=str(data.get("form_token", "")))
    return redirect(f"/admin/customers/{customer_id}?done={name.removeprefix('operator_wallet_')}")


@router.post("/admin/services/{service_id}/{action}")
async def service_action(request: Request, service_id: uuid.UUID, action: str) -> Response:
    await signed_in(request)
    data = await form(request)
    if action not in ACTIONS:
        return render(request, "error.html", status=404, title="Not found", message="no such action")
    payload = {"service_id": str(service_id), "reason": str(data.get("reason", ""))[:300]}
    result = await call(request, ACTIONS[action], payload, form_token=str(data.get("form_token", "")))
    return redirect(f"/admin/customers/{result['customer_id']}?done={action}")


@router.get("/admin/tickets")
async def tickets(request: Request) -> Response:
    await signed_in(request)
    status = request.query_params.get("status") or None
    assigned = request.query_params.get("assigned", "")[:320]
    query = {"status": status} if status else {}
    if assigned:
        query["assigned"] = assigned
    found = await call(request, "operator_ticket_list", query)
    return render(request, "tickets.html", tickets=found["items"], current=status or "", assigned=assigned)


@router.get("/admin/tickets/{ticket_id}")
async def ticket(request: Request, ticket_id: uuid.UUID) -> Response:
    who = await signed_in(request)
    ref = {"ticket_id": str(ticket_id)}
    shown = await call(request, "operator_ticket_show", ref)
    if who.role == RESELLER:  # the team's assignment and internal notes are the provider's
        return render(request, "ticket.html", t=shown, desk=None)
    return render(request, "ticket.html", t=shown, desk=await call(request, "operator_ticket_desk", ref))


@router.post("/admin/tickets/{ticket_id}/reply")
async def reply(request: Request, ticket_id: uuid.UUID) -> Response:
    await signed_in(request)
    data = await form(request)
    body = {"ticket_id": str(ticket_id), "message": str(data.get("message", "")).strip()}
    await call(request, "operator_ticket_reply", body, form_token=str(data.get("form_token", "")))
    return redirect(f"/admin/tickets/{ticket_id}?done=replied")


@router.post("/admin/tickets/{ticket_id}/close")
async def close(request: Request, ticket_id: uuid.UUID) -> Response:
    await signed_in(request)
    data = await form(request)
    await call(
        request,
        "operator_ticket_close",
        {"ticket_id": str(ticket_id)},
        form_token=str(data.get("form_token", "")),
    )
    return redirect(f"/admin/tickets/{ticket_id}?done=closed")


def _audit_filter(request: Request, limit: int) -> dict[str, object]:
    found: dict[str, object] = {
        k: request.query_params[k] for k in AUDIT_FIELDS if request.query_params.get(k)
    }
    return {**found, "limit": limit}


@router.get("/admin/audit")
async def audit(request: Request) -> Response:
    await signed_in(request)
    found = await call(request, "operator_audit_list", _audit_filter(request, 200))
    filters = {k: request.query_params.get(k, "") for k in AUDIT_FIELDS}
    return render(request, "audit.html", entries=found["entries"], f=filters, query=request.url.query)


@router.get("/admin/audit.csv")
async def audit_csv(request: Request) -> Response:
    await signed_in(request)
    found = await call(request, "operator_audit_list", _audit_filter(request, 5000))
    out = io.StringIO()
    columns = [
        "id",
        "at",
        "actor",
        "role",
        "door",
        "action",
        "target",
        "before",
        "after",
        "detail",
        "client_ip",
        "outcome",
    ]
    writer = csv.writer(out)
    writer.writerow(columns)
    for e in found["entries"]:
        writer.writerow([json.dumps(e[c]) if isinstance(e[c], dict | list) else e[c] for c in columns])
    headers = {"Content-Disposition": 'attachment; filename="audit.csv"', "Cache-Control": "no-store"}
    return Response(out.getvalue(), media_type="text/csv; charset=utf-8", headers=headers)


@router.get("/admin/stock")
async def stock(request: Request) -> Response:
    await signed_in(request)
    pools = await call(request, "operator_stock_show", {})
    prefixes = await call(request, "operator_stock_prefixes", {})
    return render(request, "stock.html", pools=pools["pools"], prefixes=prefixes["prefixes"])


@router.get("/admin/nodes")
async def nodes(request: Request) -> Response:
    await signed_in(request)
    return render(request, "nodes.html", n=await call(request, "operator_nodes", {}))


@router.get("/admin/sessions")
async def sessions(request: Request) -> Response:
    who = await signed_in(request)
    found = await call(request, "operator_my_sessions", {})
    return render(request, "sessions.html", sessions=found["sessions"], current=who.session_id)


@router.post("/admin/sessions/revoke")
async def revoke(request: Request) -> Response:
    await signed_in(request)
    data = await form(request)
    await call(request, "operator_session_revoke", {"session_id": str(data.get("session_id", ""))})
    return redirect("/admin/sessions?done=revoked")
