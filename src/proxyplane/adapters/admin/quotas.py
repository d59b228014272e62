"""The console's page of one service's traffic quota (issue 32): the current period (used, limit, bought
traffic, when it resets, the per-GB rate), read with operator_service_quota_show (customers.read); an
operator with catalog.write changes the quota (decimal GB or requests), its period or the per-GB rate with
operator_service_quota_set, which refuses a quota below the period's use (422 naming the field)."""

from __future__ import annotations

import uuid

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from proxyplane.adapters.admin.base import ConsoleRoute, call, form, redirect, render, signed_in
from proxyplane.adapters.admin.catalog import gb_text, metered

router = APIRouter(route_class=ConsoleRoute)


@router.get("/admin/quotas/{service_id}")
async def quota(request: Request, service_id: uuid.UUID) -> Response:
    await signed_in(request)
    q = await call(request, "operator_service_quota_show", {"service_id": str(service_id)})
    return render(request, "quota.html", q=q, gb=gb_text)


@router.post("/admin/quotas/{service_id}")
async def quota_set(request: Request, service_id: uuid.UUID) -> Response:
    await signed_in(request)
    data = await form(request)
    change = {"service_id": str(service_id), **metered(data)}
    await call(request, "operator_service_quota_set", change, form_token=str(data.get("form_token", "")))
    return redirect(f"/admin/quotas/{service_id}?done=quota+saved")
