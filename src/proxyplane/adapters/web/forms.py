"""Dashboard forms that change state: post/redirect/get, and one creation per form (issue 22.5).

A creating form carries a random ``form_token`` rendered with the page. The POST runs its operation with
the token as `invoke`'s ``door_key`` (``form_key``): claimed as an ``idempotency_records`` row in the
operation's own transaction, so the same form sent twice (a double click, Back then submit again) creates
once (the second gets ALREADY_SENT) and a refused action rolls the claim back with everything else, so
the corrected form can be sent; no response is stored (it may hold a secret). This module commits
nothing. Success answers 303 to a GET page, which a reload only re-reads. A secret shown once (a new API
key, a webhook signing secret, a rotated proxy password) reaches that page in a short-lived HttpOnly
cookie encrypted with the platform's SecretBox, read once and deleted by the page showing it."""

from __future__ import annotations

import json
import uuid
from typing import Any

from pydantic import BaseModel, ValidationError
from starlette.requests import Request
from starlette.responses import Response

from proxyplane.adapters.web import sessions
from proxyplane.adapters.web.base import platform_of, web_session
from proxyplane.core.errors import AlreadyApplied, IdempotencyConflict

REVEAL_COOKIE = "pp_reveal"
REVEAL_SECONDS = 300
TOKEN_FIELD = "form_token"
# the form's token already ran (with this input, or with another after Back and an edit)
ALREADY_SENT = (AlreadyApplied, IdempotencyConflict)


def new_token() -> str:
    return uuid.uuid4().hex


def _token(data: dict[str, Any]) -> str:
    return str(data.get(TOKEN_FIELD, "") or "")[:200]


def form_key(data: dict[str, Any]) -> str | None:
    """The posted form's once-only key for `invoke` (its `door_key`); None for a form without a token
    (an old page), which is not deduplicated."""
    token = _token(data)
    return f"form:{token}" if token else None


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
