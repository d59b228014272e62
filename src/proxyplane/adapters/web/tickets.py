"""Support tickets: list, open, read, reply, close (the ticket operations through `invoke`)."""

from __future__ import annotations

import uuid

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from proxyplane.adapters.web.base import WebRoute, call, form, redirect, render, require_login
from proxyplane.adapters.web.forms import ALREADY_SENT, form_key, new_token
from proxyplane.adapters.web.money_pages import int_param
from proxyplane.core.errors import DomainError, NotFound

router = APIRouter(route_class=WebRoute, include_in_schema=False)


def ticket_id(request: Request) -> str:
    try:
        return str(uuid.UUID(request.path_params["ticket_id"]))
    except ValueError:
        raise NotFound("ticket not found") from None


async def _tickets(request: Request, status: int = 200, errors: dict[str, str] | None = None) -> Response:
    page = await call(request, "list_tickets", {"offset": int_param(request, "offset"), "limit": 25})
    services = await call(request, "list_services", {"offset": 0, "limit": 100})
    return render(
        request,
        "tickets.html",
        status=status,
        page=page,
        services=services,
        form_token=new_token(),
        errors=errors or {},
    )


@router.get("/tickets")
async def tickets(request: Request) -> Response:
    await require_login(request)
    return await _tickets(request)


@router.post("/tickets")
async def open_ticket(request: Request) -> Response:
    await require_login(request)
    data = await form(request)
    body = {"subject": str(data.get("subject", "")).strip(), "message": str(data.get("message", "")).strip()}
    if data.get("service_id"):
        body["service_id"] = str(data["service_id"])
    try:
        ticket = await call(request, "open_ticket", body, form_key(data))
    except ALREADY_SENT:
        return redirect(request, "/tickets", "That form was already sent: the ticket was opened once.")
    except DomainError as exc:
        return await _tickets(request, exc.http_status, {"open": exc.message})
    return redirect(request, f"/tickets/{ticket.ticket_id}", "Ticket opened; we will answer here.")


async def _ticket(request: Request, status: int = 200, errors: dict[str, str] | None = None) -> Response:
    ticket = await call(request, "get_ticket", {"ticket_id": ticket_id(request)})
    return render(
        request, "ticket.html", status=status, ticket=ticket, form_token=new_token(), errors=errors or {}
    )


@router.get("/tickets/{ticket_id}")
async def ticket(request: Request) -> Response:
    await require_login(request)
    return await _ticket(request)


@router.post("/tickets/{ticket_id}/reply")
async def reply(request: Request) -> Response:
    await require_login(request)
    data = await form(request)
    tid = ticket_id(request)
    body = {"ticket_id": tid, "message": str(data.get("message", "")).strip()}
    try:
        await call(request, "reply_ticket", body, form_key(data))
    except ALREADY_SENT:
        return redirect(request, f"/tickets/{tid}", "That reply was already sent (once).")
    except DomainError as exc:
        return await _ticket(request, exc.http_status, {"reply": exc.message})
    return redirect(request, f"/tickets/{tid}", "Reply sent.")


@router.post("/tickets/{ticket_id}/close")
async def close(request: Request) -> Response:
    await require_login(request)
    await form(request)
    tid = ticket_id(request)
    try:
        await call(request, "close_ticket", {"ticket_id": tid})
    except DomainError as exc:
        return await _ticket(request, exc.http_status, {"reply": exc.message})
    return redirect(request, f"/tickets/{tid}", "Ticket closed.")
