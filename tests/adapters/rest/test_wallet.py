"""Wallet balance, ledger bounds and top-ups through the built-in test processor."""

import asyncio
import uuid

import httpx
import pytest

from proxyplane.platform import Platform
from tests.support import Account, bearer

pytestmark = pytest.mark.anyio


async def test_new_account_balance_is_zero(client: httpx.AsyncClient, account: Account) -> None:
    r = await client.get("/api/v1/customer/wallet/balance", headers=bearer(await account.key()))
    assert r.status_code == 200 and r.json()["balance_cents"] == 0
    ledger = (await client.get("/api/v1/customer/wallet/ledger", headers=bearer(await account.key()))).json()
    assert ledger["items"] == [] and ledger["total"] == 0


async def test_ledger_newest_first_and_bounds(client: httpx.AsyncClient, account: Account) -> None:
    key = await account.key()
    for cents in (100, 200, 300):
        await account.credit(cents)
    page = (await client.get("/api/v1/customer/wallet/ledger", headers=bearer(key))).json()
    assert [e["amount_cents"] for e in page["items"]] == [300, 200, 100]
    assert page["items"][0]["balance_after_cents"] == 600 and page["limit"] == 50 and page["offset"] == 0
    page = (await client.get("/api/v1/customer/wallet/ledger?offset=1&limit=1", headers=bearer(key))).json()
    assert [e["amount_cents"] for e in page["items"]] == [200] and page["total"] == 3
    for q in ("offset=-1", "limit=0", "limit=201", "limit=abc", "offset=1.5"):
        r = await client.get(f"/api/v1/customer/wallet/ledger?{q}", headers=bearer(key))
        assert r.status_code == 422, q
    assert (
        await client.get("/api/v1/customer/wallet/ledger?limit=200", headers=bearer(key))
    ).status_code == 200
    assert (await client.get("/api/v1/customer/wallet/balance", headers=bearer(key))).json()[
        "balance_cents"
    ] == 600


async def _init(client: httpx.AsyncClient, key: str, **body: object) -> httpx.Response:
    payload = {"amount_cents": 2500, "payment_method": "card", "idempotency_key": uuid.uuid4().hex, **body}
    return await client.post("/api/v1/customer/wallet/deposit/init", json=payload, headers=bearer(key))


async def test_topup_credits_only_after_confirmation(client: httpx.AsyncClient, account: Account) -> None:
    key = await account.key()
    r = await _init(client, key)
    assert r.status_code == 200, r.text
    dep = r.json()
    assert dep["status"] == "pending" and dep["checkout_url"].startswith("http://testserver/checkout/test/")
    assert (await client.get("/api/v1/customer/wallet/balance", headers=bearer(key))).json()[
        "balance_cents"
    ] == 0
    # the payer opens the checkout page and pays
    path = dep["checkout_url"].removeprefix("http://testserver")
    page = await client.get(path)
    assert page.status_code == 200 and "$25.00" in page.text
    token = path.split("token=")[1]
    r = await client.post(
        f"/checkout/test/{dep['deposit_id']}/decide", data={"token": token, "decision": "paid"}
    )
    assert r.status_code == 200 and "paid" in r.text
    assert (await client.get("/api/v1/customer/wallet/balance", headers=bearer(key))).json()[
        "balance_cents"
    ] == 2500
    status = (
        await client.get(f"/api/v1/customer/wallet/deposits/{dep['deposit_id']}", headers=bearer(key))
    ).json()
    assert status["status"] == "paid"
    entry = (await client.get("/api/v1/customer/wallet/ledger", headers=bearer(key))).json()["items"][0]
    assert entry["kind"] == "deposit" and entry["deposit_id"] == dep["deposit_id"]


async def test_declined_checkout_credits_nothing(client: httpx.AsyncClient, account: Account) -> None:
    key = await account.key()
    dep = (await _init(client, key)).json()
    token = dep["checkout_url"].split("token=")[1]
    await client.post(
        f"/checkout/test/{dep['deposit_id']}/decide", data={"token": token, "decision": "failed"}
    )
    assert (await client.get("/api/v1/customer/wallet/balance", headers=bearer(key))).json()[
        "balance_cents"
    ] == 0
    # a later "paid" for the same deposit cannot resurrect it
    await client.post(f"/checkout/test/{dep['deposit_id']}/decide", data={"token": token, "decision": "paid"})
    assert (await client.get("/api/v1/customer/wallet/balance", headers=bearer(key))).json()[
        "balance_cents"
    ] == 0
    bad = await client.post(
        f"/checkout/test/{dep['deposit_id']}/decide", data={"token": "x", "decision": "paid"}
    )
    assert bad.status_code == 404


async def test_repeated_and_concurrent_callbacks_credit_once(
    client: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    key = await account.key()
    dep = (await _init(client, key, amount_cents=1234)).json()
    body, headers = platform.processor().signed_callback(uuid.UUID(dep["deposit_id"]), "paid", 1234)
    results = await asyncio.gather(
        *[client.post("/api/v1/payments/test/callback", content=body, headers=headers) for _ in range(6)]
    )
    assert all(r.status_code == 200 for r in results)
    again = await client.post("/api/v1/payments/test/callback", content=body, headers=headers)
    assert again.status_code == 200
    assert (await client.get("/api/v1/customer/wallet/balance", headers=bearer(key))).json()[
        "balance_cents"
    ] == 1234
    ledger = (await client.get("/api/v1/customer/wallet/ledger", headers=bearer(key))).json()
    assert ledger["total"] == 1


async def test_callback_runs_the_registered_processor_operation(
    client: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    """Issue 20: the processor's callback is the operation `payment_event` of the `processor` door only;
    a verified event whose amount differs is answered, applied to nothing, and credits nothing."""
    from proxyplane.operations import REGISTRY

    assert {name for name, op in REGISTRY.items() if op.serves("processor")} == {"payment_event"}
    assert not any(REGISTRY["payment_event"].serves(door) for door in ("rest", "mcp", "legacy", "web"))
    key = await account.key()
    deposit_id = uuid.UUID((await _init(client, key, amount_cents=1500)).json()["deposit_id"])
    body, headers = platform.processor().signed_callback(deposit_id, "paid", 1499)
    r = await client.post("/api/v1/payments/test/callback", content=body, headers=headers)
    assert r.status_code == 200 and r.json()["applied"] is False and "differs" in r.json()["error"]
    assert (await client.get("/api/v1/customer/wallet/balance", headers=bearer(key))).json()[
        "balance_cents"
    ] == 0
    body, headers = platform.processor().signed_callback(deposit_id, "paid", 1500)
    r = await client.post("/api/v1/payments/test/callback", content=body, headers=headers)
    assert r.json() == {"received": True, "applied": True, "deposit_id": str(deposit_id), "status": "paid"}
    assert (await client.get("/api/v1/customer/wallet/balance", headers=bearer(key))).json()[
        "balance_cents"
    ] == 1500


async def test_forged_callback_is_refused(
    client: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    key = await account.key()
    dep = (await _init(client, key)).json()
    body, headers = platform.processor().signed_callback(uuid.UUID(dep["deposit_id"]), "paid", 2500)
    tampered = body.replace(b"2500", b"9999")
    r = await client.post("/api/v1/payments/test/callback", content=tampered, headers=headers)
    assert r.status_code == 400 and r.json()["detail"]["error"] == "bad_signature"
    r = await client.post("/api/v1/payments/test/callback", content=body, headers={})
    assert r.status_code == 400
    old_body, old_headers = platform.processor().signed_callback(
        uuid.UUID(dep["deposit_id"]), "paid", 2500, timestamp=1
    )
    assert (
        await client.post("/api/v1/payments/test/callback", content=old_body, headers=old_headers)
    ).status_code == 400
    assert (await client.get("/api/v1/customer/wallet/balance", headers=bearer(key))).json()[
        "balance_cents"
    ] == 0


async def test_same_idempotency_key_same_checkout(client: httpx.AsyncClient, account: Account) -> None:
    key = await account.key()
    a = await _init(client, key, idempotency_key="topup-1")
    b = await _init(client, key, idempotency_key="topup-1")
    assert a.json() == b.json()
    different = await _init(client, key, idempotency_key="topup-1", amount_cents=999)
    assert different.status_code == 409
    both = await asyncio.gather(*[_init(client, key, idempotency_key="topup-2") for _ in range(4)])
    assert len({r.json()["deposit_id"] for r in both}) == 1


async def test_kyc_required_method(client: httpx.AsyncClient, platform: Platform, account: Account) -> None:
    key = await account.key()
    r = await _init(client, key, payment_method="bank_transfer")
    assert r.status_code == 403 and r.json()["detail"]["error"] == "kyc_required"
    methods = (await client.get("/api/v1/customer/wallet/payment-methods", headers=bearer(key))).json()
    bank = next(m for m in methods["methods"] if m["id"] == "bank_transfer")
    assert bank["kyc_required"] is True and bank["available"] is False
    from proxyplane.domains.accounts.service import get_customer, set_kyc_verified

    async with platform.db.unit_of_work() as uow:
        await set_kyc_verified(uow.session, await get_customer(uow.session, account.customer_id))
        await uow.commit()
    assert (await _init(client, key, payment_method="bank_transfer")).status_code == 200


async def test_bad_deposit_input(client: httpx.AsyncClient, account: Account) -> None:
    key = await account.key()
    for body in (
        {"amount_cents": 0},
        {"amount_cents": -5},
        {"amount_cents": 10.5},
        {"payment_method": "gold"},
        {"amount_cents": 1},
        {"amount_cents": 10**9},
        {"idempotency_key": ""},
    ):
        r = await _init(client, key, **body)
        assert r.status_code == 422, (body, r.text)
    r = await client.post(
        "/api/v1/customer/wallet/deposit/init",
        json={"amount_cents": 1000, "payment_method": "card"},
        headers=bearer(key),
    )
    assert r.status_code == 422
    assert (
        await client.get(f"/api/v1/customer/wallet/deposits/{uuid.uuid4()}", headers=bearer(key))
    ).status_code == 404
