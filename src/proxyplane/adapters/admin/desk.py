"""The ticket page's team forms (issue 33): assign the ticket (to oneself, another operator, or nobody)
and add an internal note; console-door operations operator_ticket_assign and operator_ticket_note."""

from __future__ import annotations

import uuid

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from proxyplane.adapters.admin.base import ConsoleRoute, call, form, redirect, signed_in

router = APIRouter(route_class=ConsoleRoute)


@router.post("/admin/tickets/{ticket_id}/assign")
async def assign(request: Request, ticket_id: uuid.UUID) -> Response:
    who = await signed_in(request)
    data = await form(request)
    to = who.email if data.get("me") else str(data.get("operator_email", "")).strip()
    body = {"ticket_id": str(ticket_id), "operator_email": to}
    await call(request, "operator_ticket_assign", body, form_token=str(data.get("form_token", "")))
    return redirect(f"/admin/tickets/{ticket_id}?done={'assigned' if to else 'unassigned'}")


@router.post("/admin/tickets/{ticket_id}/note")
async def note(request: Request, ticket_id: uuid.UUID) -> Response:
    await signed_in(request)
    data = await form(request)
    body = {"ticket_id": str(ticket_id), "note": str(data.get("note", "")).strip()}
    await call(request, "operator_ticket_note", body, form_token=str(data.get("form_token", "")))
    return redirect(f"/admin/tickets/{ticket_id}?done=note+added")
