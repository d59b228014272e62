"""Payment processor callbacks (not customer operations: the processor calls them, signed)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from proxyplane.adapters.rest.errors import error_response
from proxyplane.payment_events import process_event
from proxyplane.platform import Platform


def payments_router(platform: Platform) -> APIRouter:
    router = APIRouter(prefix="/payments", include_in_schema=False)

    @router.post("/{processor}/callback")
    async def callback(processor: str, request: Request) -> JSONResponse:
        proc = platform.processor()
        if processor != proc.name:
            return error_response(404, {"error": "not_found", "message": f"no processor {processor!r} here"})
        body = await request.body()
        try:
            event = proc.parse_callback(body, dict(request.headers))
        except ValueError as exc:
            return error_response(400, {"error": "bad_signature", "message": str(exc)})
        if event is None:
            return JSONResponse({"received": True, "applied": False})
        return JSONResponse(await process_event(platform, event))

    return router
