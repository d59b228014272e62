"""Console pages of resellers (issue 33.4): a reseller's wallet page (its balance, discount, number of
customers and ledger; staff open any reseller's with ?email=), the resellers list with a credit form
(staff), and the new-customer form of the customers page (a reseller's new customer is bound to it).
Each runs the console-door operation through `invoke`; the operations do the scoping."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from proxyplane.adapters.admin.base import ConsoleRoute, call, form, redirect, render, signed_in

router = APIRouter(route_class=ConsoleRoute)


def _cents(value: object) -> int:
    try:
        return round(float(str(value or "0")) * 100)
    except ValueError:
        return 0


@router.get("/admin/reseller")
async def wallet(request: Request) -> Response:
    await signed_in(request)
    email = request.query_params.get("email", "")[:320]
    shown = await call(request, "operator_reseller_wallet", {"operator_email": email, "limit": 100})
    return render(request, "reseller.html", w=shown)


@router.get("/admin/resellers")
async def resellers(request: Request) -> Response:
    await signed_in(request)
    found = await call(request, "operator_reseller_list", {})
    return render(request, "resellers.html", resellers=found["resellers"])


@router.post("/admin/resellers/credit")
async def credit(request: Request) -> Response:
    await signed_in(request)
    data = await form(request)
    cents, reason = _cents(data.get("amount")), str(data.get("reason", "")).strip()
    move = {"operator_email": str(data.get("operator_email", "")), "cents": cents, "reason": reason}
    if cents <= 0 or not reason:
        found = await call(request, "operator_reseller_list", {})
        error = "Give a positive amount and a reason."
        return render(request, "resellers.html", status=422, resellers=found["resellers"], error=error)
    await call(request, "operator_reseller_credit", move, form_token=str(data.get("form_token", "")))
    return redirect("/admin/resellers?done=credited")


@router.post("/admin/customers/new")
async def new_customer(request: Request) -> Response:
    await signed_in(request)
    data = await form(request)
    made = await call(
        request,
        "operator_create_customer",
        {
            "email": str(data.get("email", "")).strip(),
            "password": str(data.get("password", "")),
            "name": str(data.get("name", "")).strip()[:200],
        },
        form_token=str(data.get("form_token", "")),
    )
    return redirect(f"/admin/customers/{made['customer_id']}?done=created")
