"""Resellers (issue 33.4) on the operator API and its MCP endpoint, through the real app: a reseller's
key sees and acts on its own customers only (another's customer is the 404 of one that does not exist,
never a 403), its credit to its customer is paid from its wallet once per Idempotency-Key /
idempotency_key, 402 insufficient_balance when the wallet cannot pay; the audit rows name the reseller."""

from __future__ import annotations

import json
import uuid

import httpx
import pytest
from fastapi import FastAPI

from proxyplane.platform import Platform
from tests.adapters.admin_api.test_mcp import app, operator_client, text
from tests.domains.operators.helpers import make_reseller, run
from tests.support import Account, bearer, unique_email

pytestmark = pytest.mark.anyio
API = "/api/admin/v1"
__all__ = ["app"]  # the MCP tests' app fixture


async def test_rest_reseller_isolation_and_money(
    client: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    email, key, _ = await make_reseller(platform, 25)
    auth = bearer(key)
    made = await client.post(
        f"{API}/create_customer",
        json={"email": unique_email(), "password": "correct horse battery"},
        headers=auth,
    )
    assert made.status_code == 200, made.text
    mine = made.json()
    listed = (await client.get(f"{API}/customer_search", params={"query": ""}, headers=auth)).json()
    assert [c["customer_id"] for c in listed["customers"]] == [mine["customer_id"]]
    own = await client.get(f"{API}/customer_view", params={"customer_id": mine["customer_id"]}, headers=auth)
    assert own.status_code == 200 and own.json()["email"] == mine["email"]
    other = await client.get(
        f"{API}/customer_view", params={"customer_id": account.customer_id}, headers=auth
    )
    none = await client.get(f"{API}/customer_view", params={"customer_id": 2_000_000_001}, headers=auth)
    assert other.status_code == none.status_code == 404
    assert other.json()["detail"]["error"] == none.json()["detail"]["error"] == "not_found"
    move = {"email": account.email, "cents": 100, "reason": "x"}
    refused = await client.post(f"{API}/wallet_credit", json=move, headers={**auth, "Idempotency-Key": "a"})
    assert refused.status_code == 404 and account.email in refused.json()["detail"]["message"]
    assert (await run(platform, "operator_show_customer", email=account.email))["balance_cents"] == 0
    forbidden = await client.get(f"{API}/overview", headers=auth)
    assert forbidden.status_code == 403 and forbidden.json()["detail"]["missing_permission"] == "reports.read"
    # money: the provider sells it 1000; a 1000 credit to its customer costs it 750, once per key
    await run(platform, "operator_reseller_credit", operator_email=email, cents=1_000, reason="invoice 7")
    credit = {"email": mine["email"], "cents": 1_000, "reason": "paid cash"}
    once = {**auth, "Idempotency-Key": uuid.uuid4().hex}
    first = await client.post(f"{API}/wallet_credit", json=credit, headers=once)
    assert first.status_code == 200, first.text
    assert first.json() | {"email": ""} == {
        "email": "",
        "balance_cents": 1_000,
        "reseller_charged_cents": 750,
        "reseller_balance_cents": 250,
    }
    again = await client.post(f"{API}/wallet_credit", json=credit, headers=once)
    assert again.status_code == 409 and again.json()["detail"]["error"] == "already_applied"
    broke = await client.post(f"{API}/wallet_credit", json=credit, headers={**auth, "Idempotency-Key": "b"})
    assert broke.status_code == 402 and broke.json()["detail"]["error"] == "insufficient_balance"
    unkeyed = await client.post(f"{API}/wallet_credit", json={**credit, "cents": 100}, headers=auth)
    assert unkeyed.status_code == 422
    shown = (await client.get(f"{API}/reseller_wallet", headers=auth)).json()
    assert shown["balance_cents"] == 250 and [e["amount_cents"] for e in shown["ledger"]] == [-750, 1_000]
    assert (await run(platform, "operator_show_customer", email=mine["email"]))["balance_cents"] == 1_000
    rows = (await run(platform, "operator_audit_list", actor=email))["entries"]
    assert {(r["action"], r["role"], r["outcome"]) for r in rows} >= {
        ("operator_create_customer", "reseller", "ok"),
        ("operator_wallet_credit", "reseller", "ok"),
        ("operator_overview", "reseller", "refused"),
    }


async def test_mcp_reseller_isolation_and_a_credit_paid_once(
    app: FastAPI, platform: Platform, account: Account
) -> None:
    email, key, reseller = await make_reseller(platform, 10)
    mine = await run(
        platform, "operator_create_customer", reseller, email=unique_email(), password="correct horse battery"
    )
    await run(platform, "operator_reseller_credit", operator_email=email, cents=500, reason="sold")
    async with operator_client(app, key) as client:
        found = await client.call_tool("operator_customer_search", {"query": ""})
        assert [c["customer_id"] for c in json.loads(text(found))["customers"]] == [mine["customer_id"]]
        other = await client.call_tool("operator_customer_view", {"customer_id": account.customer_id})
        assert other.is_error and text(other).startswith("not_found:")
        theirs = await client.call_tool("operator_show_customer", {"email": account.email})
        assert theirs.is_error and text(theirs).startswith("not_found:")
        move = {"email": mine["email"], "cents": 300, "reason": "agent", "idempotency_key": uuid.uuid4().hex}
        first = await client.call_tool("operator_wallet_credit", move)
        assert first.is_error is False, text(first)
        assert first.structured_content and first.structured_content["reseller_charged_cents"] == 270
        again = await client.call_tool("operator_wallet_credit", move)
        assert again.is_error and "already_applied" in text(again)
        broke = await client.call_tool("operator_wallet_credit", {**move, "idempotency_key": "next"})
        assert broke.is_error and text(broke).startswith("insufficient_balance:")
    wallet = await run(platform, "operator_reseller_wallet", operator_email=email)
    assert wallet["balance_cents"] == 230 and len(wallet["ledger"]) == 2
    assert (await run(platform, "operator_show_customer", email=mine["email"]))["balance_cents"] == 300
