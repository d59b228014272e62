"""The email outbox in the console (issue 34): /admin/outbox lists the newest messages (status and
recipient filters: whether each was sent, is waiting for a retry, or failed with the server's answer);
/admin/outbox/ID shows one message's text part and headers, links included (permission mail.bodies);
POST /admin/outbox/ID/retry sends a failed one again (mail.retry). All run the outbox operations of
domains/mail/operator_ops.py on the console door."""

from __future__ import annotations

from urllib.parse import quote

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from proxyplane.adapters.admin.base import ConsoleRoute, call, form, redirect, render, signed_in
from proxyplane.domains.mail.operator_ops import STATUSES

router = APIRouter(route_class=ConsoleRoute)


@router.get("/admin/outbox")
async def outbox(request: Request) -> Response:
    await signed_in(request)
    status = request.query_params.get("status", "")
    to = request.query_params.get("to", "").strip()[:320]
    query: dict[str, object] = {"limit": 100}
    if status in STATUSES:
        query["status"] = status
    if to:
        query["to"] = to
    found = await call(request, "operator_outbox_list", query)
    return render(
        request,
        "outbox.html",
        messages=found["items"],
        statuses=STATUSES,
        current=query.get("status", ""),
        to=to,
    )


@router.get("/admin/outbox/{message_id}")
async def message(request: Request, message_id: int) -> Response:
    await signed_in(request)
    return render(
        request,
        "outbox_message.html",
        m=await call(request, "operator_outbox_show", {"message_id": message_id}),
    )


@router.post("/admin/outbox/{message_id}/retry")
async def retry(request: Request, message_id: int) -> Response:
    await signed_in(request)
    data = await form(request)
    done = await call(
        request,
        "operator_outbox_retry",
        {"message_id": message_id},
        form_token=str(data.get("form_token", "")),
    )
    said = "queued+again" if done.get("retried") else "not+retried:+it+had+not+failed"
    return redirect(f"/admin/outbox?to={quote(str(done['to']))}&done={said}")
