"""Refused operator attempts are in the audit log (issue 33): a role without the permission on the
operator API, the console and the CLI's invoke (outcome "refused", the missing permission, who, from
where); a known operator's wrong password, a locked operator's right one, a wrong TOTP code at enrolment
and at sign-in (outcome "wrong" / "locked"). An unknown email and an unknown key leave no row."""

from __future__ import annotations

import re

import httpx
import pytest

from proxyplane.core.clock import utcnow
from proxyplane.platform import Platform
from tests.adapters.admin.test_console import csrf, sign_in
from tests.domains.operators.helpers import make_operator, operator_caller, run, unique_operator_email
from tests.support import Account, bearer

pytestmark = pytest.mark.anyio
API = "/api/admin/v1"


async def audit_of(platform: Platform, **filters: str) -> list[dict[str, object]]:
    found = await run(platform, "operator_audit_list", **filters)
    entries: list[dict[str, object]] = found["entries"]
    return entries


async def test_a_refused_api_call_is_audited_with_the_missing_permission(
    client: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    email, _, key = await make_operator(platform, "support")
    body = {"email": account.email, "cents": 500, "reason": "not mine to give"}
    refused = await client.post(f"{API}/wallet_credit", json=body, headers=bearer(key))
    assert refused.status_code == 403
    read = await client.get(f"{API}/audit_list", headers=bearer(key))
    assert read.status_code == 403
    entries = await audit_of(platform, actor=email)
    assert [(e["action"], e["outcome"]) for e in entries] == [
        ("operator_audit_list", "refused"),
        ("operator_wallet_credit", "refused"),
    ]
    credit = entries[1]
    assert credit["after"] == {"error": "forbidden", "missing_permission": "wallet.credit"}
    assert (
        credit["role"] == "support" and credit["door"] == "admin_api" and credit["client_ip"] == "127.0.0.9"
    )
    # the refused filter finds them; nothing ran: the wallet is untouched
    assert len(await audit_of(platform, actor=email, outcome="refused")) == 2
    assert await audit_of(platform, actor=email, outcome="ok") == []
    view = await run(platform, "operator_customer_view", customer_id=account.customer_id)
    assert view["balance_cents"] == 0
    # an unknown key is nobody: 401 and no row
    since = utcnow().isoformat()
    assert (await client.get(f"{API}/overview", headers=bearer("ppo_not-a-key"))).status_code == 401
    assert await audit_of(platform, action="operator_overview", since=since) == []


async def test_a_refused_invoke_is_audited_with_its_input_masked(platform: Platform) -> None:
    email = unique_operator_email()
    caller = operator_caller("viewer", email)
    with pytest.raises(Exception) as info:
        await run(platform, "operator_operator_create", caller, operator_email="x@example.com", role="owner")
    assert getattr(info.value, "extra", {}).get("missing_permission") == "operators.manage"
    (entry,) = await audit_of(platform, actor=email)
    assert entry["outcome"] == "refused" and entry["target"] == "operator_email:x@example.com"
    assert entry["detail"] == {"operator_email": "x@example.com", "role": "owner"}


async def test_console_refusals_and_bad_sign_in_steps_are_audited(
    client: httpx.AsyncClient, platform: Platform
) -> None:
    email, secret = await sign_in(client, platform, "support")
    assert (await client.get("/admin/audit")).status_code == 403
    page = await client.get("/admin/sessions")
    await client.post("/admin/logout", data={"csrf": csrf(page.text)})
    login = await client.get("/admin/login")
    wrong = await client.post(
        "/admin/login", data={"csrf": csrf(login.text), "email": email, "password": "not-the-password"}
    )
    assert wrong.status_code == 401
    right = await client.post(
        "/admin/login", data={"csrf": csrf(login.text), "email": email, "password": "console-password-1"}
    )
    assert right.headers["location"] == "/admin/totp"
    form = await client.get("/admin/totp")
    bad = await client.post("/admin/totp", data={"csrf": csrf(form.text), "code": "000000"})
    assert bad.status_code == 401
    entries = await audit_of(platform, actor=email)
    refused = [(e["action"], e["outcome"], e["door"]) for e in entries if e["outcome"] != "ok"]
    assert refused == [
        ("console_sign_in", "wrong", "console"),
        ("console_password", "wrong", "console"),
        ("operator_audit_list", "refused", "console"),
    ]
    assert "not-the-password" not in str(entries) and "000000" not in str(entries)
    # locked: the right password of a locked operator is refused like a wrong one, and recorded as locked
    await run(platform, "operator_operator_lock", operator_email=email)
    login = await client.get("/admin/login")
    locked = await client.post(
        "/admin/login", data={"csrf": csrf(login.text), "email": email, "password": "console-password-1"}
    )
    assert locked.status_code == 401 and "Wrong email, password or code." in locked.text
    assert (await audit_of(platform, actor=email, action="console_password"))[0]["outcome"] == "locked"
    # an unknown email: no row names it
    ghost = unique_operator_email()
    await client.post(
        "/admin/login", data={"csrf": csrf(login.text), "email": ghost, "password": "whatever-it-is"}
    )
    assert await audit_of(platform, actor=ghost) == []


async def test_a_wrong_enrolment_code_is_audited(client: httpx.AsyncClient, platform: Platform) -> None:
    email, once, _ = await make_operator(platform, "viewer")
    login = await client.get("/admin/login")
    await client.post("/admin/login", data={"csrf": csrf(login.text), "email": email, "password": once})
    enrol = await client.get("/admin/enrol")
    assert re.search(r'id="totp-secret">', enrol.text)
    data = {"csrf": csrf(enrol.text), "code": "000000", "new_password": "console-password-1"}
    assert (await client.post("/admin/enrol", data=data)).status_code == 401
    (entry,) = await audit_of(platform, actor=email, outcome="wrong")
    assert entry["action"] == "console_totp_enrolled" and entry["client_ip"] == "127.0.0.9"


async def test_the_console_audit_page_filters_refusals(client: httpx.AsyncClient, platform: Platform) -> None:
    _, _, key = await make_operator(platform, "viewer")
    await client.post(f"{API}/service_suspend", json={}, headers=bearer(key))
    await sign_in(client, platform, "owner")
    page = await client.get(
        "/admin/audit", params={"outcome": "refused", "action": "operator_service_suspend"}
    )
    assert page.status_code == 200 and 'class="refused">refused<' in page.text
    exported = await client.get(
        "/admin/audit.csv", params={"outcome": "refused", "action": "operator_service_suspend"}
    )
    header, *rows = exported.text.strip().splitlines()
    assert header.endswith(",outcome") and rows and all(r.endswith(",refused") for r in rows)
