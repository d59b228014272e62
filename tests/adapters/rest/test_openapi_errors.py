"""Issue 19.1: every operation documents every error status it can answer, with the one real error body."""

from __future__ import annotations

import re
import uuid

import httpx
import pytest

from proxyplane.adapters.rest.openapi import ErrorResponse, error_statuses
from proxyplane.operations import REGISTRY
from proxyplane.ops import Auth, Effect, served
from tests.support import Account, bearer

pytestmark = pytest.mark.anyio

ERROR_REF = "#/components/schemas/ErrorResponse"


async def _spec(client: httpx.AsyncClient) -> dict:
    r = await client.get("/api/v1/openapi.json")
    assert r.status_code == 200
    return r.json()


async def test_each_operation_documents_its_error_statuses_with_the_shared_body(
    client: httpx.AsyncClient,
) -> None:
    spec = await _spec(client)
    assert "HTTPValidationError" not in spec["components"]["schemas"]  # FastAPI's default 422 is gone
    for op in served("rest", REGISTRY).values():
        responses = spec["paths"]["/api/v1" + op.path][op.method.lower()]["responses"]
        documented = {int(s) for s in responses if int(s) >= 400}
        expected = set(error_statuses(op))
        assert documented == expected, op.name
        if op.auth == Auth.KEY:
            assert {401, 403} <= documented, op.name
        if re.search(r"{\w+}", op.path):
            assert 404 in documented, op.name
        if op.effect == Effect.SPENDS_MONEY:
            assert {402, 409} <= documented, op.name
        if op.input is not None:
            assert 422 in documented, op.name
        for status in documented:
            assert responses[str(status)]["content"]["application/json"]["schema"]["$ref"] == ERROR_REF


async def test_the_shared_error_model_names_the_documented_extra_fields(client: httpx.AsyncClient) -> None:
    detail = (await _spec(client))["components"]["schemas"]["ErrorDetail"]
    assert set(detail["required"]) == {"error", "message"}
    for name in ("errors", "missing_scopes", "current_price_cents", "required_cents", "balance_cents"):
        assert name in detail["properties"], name
    assert detail.get("additionalProperties", True) is not False  # codes may add their own fields


async def test_real_error_bodies_match_the_documented_model(
    client: httpx.AsyncClient, account: Account
) -> None:
    narrow = await account.key({"wallet:read"})
    full = await account.key()
    answers = [
        (await client.get("/api/v1/customer/wallet/balance"), 401, "unauthorized"),
        (await client.get("/api/v1/customer/me", headers=bearer(narrow)), 403, "missing_scope"),
        (
            await client.get(f"/api/v1/customer/services/{uuid.uuid4()}", headers=bearer(full)),
            404,
            "not_found",
        ),
        (
            await client.get("/api/v1/customer/wallet/ledger?limit=0", headers=bearer(full)),
            422,
            "validation_error",
        ),
    ]
    for r, status, code in answers:
        assert r.status_code == status, r.text
        body = ErrorResponse.model_validate(r.json())
        assert body.detail.error == code
    assert ErrorResponse.model_validate(answers[1][0].json()).detail.missing_scopes == ["customer:read"]
    field_errors = ErrorResponse.model_validate(answers[3][0].json()).detail.errors
    assert field_errors and field_errors[0].model_dump()["loc"] == ["query", "limit"]
