"""Dashboard forms that change state: post/redirect/get, and one creation per form (issue 22.5).

A creating form carries a random ``form_token`` rendered with the page. The POST claims it (a row of
``idempotency_records`` under the operation ``web:<form>``) before acting, so the same form sent twice (a
double click, Back then submit again) creates once; a refused action gives the token back so the
corrected form can be sent. Success answers 303 to a GET page, which a reload only re-reads. A secret shown
once (a new API key, a webhook signing secret, a rotated proxy password) reaches that page in a short-lived
HttpOnly cookie encrypted with the platform's SecretBox, read once and deleted by the page showing it."""

from __future__ import annotations

import json
import uuid
from typing import Any

from pydantic import BaseModel, ValidationError
from sqlalchemy import delete
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from starlette.requests import Request
from starlette.responses import Response

from proxyplane.adapters.web import sessions
from proxyplane.adapters.web.base import platform_of, web_session
from proxyplane.core.clock import utcnow
from proxyplane.storage.models import IdempotencyRecord

REVEAL_COOKIE = "pp_reveal"
REVEAL_SECONDS = 300
TOKEN_FIELD = "form_token"


def new_token() -> str:
    return uuid.uuid4().hex


def _token(data: dict[str, Any]) -> str:
    return str(data.get(TOKEN_FIELD, "") or "")[:200]


async def claim(request: Request, form_name: str, data: dict[str, Any]) -> bool:
    """Take the posted form's token for ``form_name``; False when that form was already sent. A form
    without a token (an old page) is not deduplicated."""
    token = _token(data)
    if not token:
        return True
    db = platform_of(request).db
    values = {
        "customer_id": web_session(request).customer_id,
        "operation": f"web:{form_name}",
        "key": token,
        "request_hash": "",
        "response": {},
        "created_at": utcnow(),
    }
    async with db.unit_of_work() as uow:
        stmt = (
            pg_insert(IdempotencyRecord) if uow.dialect == "postgresql" else sqlite_insert(IdempotencyRecord)
        )
        taken = await uow.session.execute(
            stmt.values(**values).on_conflict_do_nothing().returning(IdempotencyRecord.id)
        )
        fresh = taken.scalar_one_or_none() is not None
        await uow.commit()
    return fresh


async def release(request: Request, form_name: str, data: dict[str, Any]) -> None:
    """Give the token back after a refused action (nothing was created)."""
    token = _token(data)
    if not token:
        return
    async with platform_of(request).db.unit_of_work() as uow:
        await uow.session.execute(
            delete(IdempotencyRecord).where(
                IdempotencyRecord.customer_id == web_session(request).customer_id,
                IdempotencyRecord.operation == f"web:{form_name}",
                IdempotencyRecord.key == token,
            )
        )
        await uow.commit()


def reveal(request: Request, response: Response, what: str, result: BaseModel) -> None:
    """Carry ``result`` (holding a secret) to the page ``response`` redirects to, once."""
    box = platform_of(request).secrets
    owner = web_session(request).customer_id
    payload = json.dumps({"what": what, "owner": owner, "data": result.model_dump(mode="json")})
    sessions.set_cookie(request, response, REVEAL_COOKIE, box.encrypt(payload), REVEAL_SECONDS)


def take_reveal(request: Request, what: str, model: type[BaseModel]) -> BaseModel | None:
    """The result ``reveal`` carried for ``what``, if this request has it (the caller then calls
    ``forget_reveal`` on its response)."""
    raw = request.cookies.get(REVEAL_COOKIE, "")
    if not raw:
        return None
    try:
        payload = json.loads(platform_of(request).secrets.decrypt(raw))
        if payload.get("what") != what or payload.get("owner") != web_session(request).customer_id:
            return None
        return model.model_validate(payload["data"])
    except (ValueError, KeyError, TypeError, ValidationError):
        return None


def forget_reveal(request: Request, response: Response) -> Response:
    if REVEAL_COOKIE in request.cookies:
        response.delete_cookie(REVEAL_COOKIE, path="/")
    return response
