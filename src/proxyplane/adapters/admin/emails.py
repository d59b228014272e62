"""The customer page's "resend email" buttons (issue 33): a verification or password-reset link mail,
queued by the console-door operation `operator_customer_resend_email` (the link is never shown here)."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from proxyplane.adapters.admin.base import ConsoleRoute, call, form, redirect, signed_in

router = APIRouter(route_class=ConsoleRoute)


@router.post("/admin/customers/{customer_id}/email")
async def resend(request: Request, customer_id: int) -> Response:
    await signed_in(request)
    data = await form(request)
    body = {"customer_id": customer_id, "kind": str(data.get("kind", ""))}
    done = await call(
        request, "operator_customer_resend_email", body, form_token=str(data.get("form_token", ""))
    )
    return redirect(f"/admin/customers/{customer_id}?done={done['kind']}+email+queued")
