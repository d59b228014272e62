"""The console at /admin through the real app (issue 33): sign-in with the one-time password, TOTP
enrolment, the code at the next sign-in; pages refuse without sign-in and with a role lacking the
permission (403 naming it); a credit form acts once; the audit page and its CSV show what was done,
never a secret."""

from __future__ import annotations

import re
import uuid

import httpx
import pytest

from proxyplane.platform import Platform
from tests.domains.operators.helpers import code_now, make_operator
from tests.support import Account

pytestmark = pytest.mark.anyio
CSRF = re.compile(r'name="csrf" value="([^"]+)"')
TOKEN = re.compile(r'name="form_token" value="([^"]+)"')


def csrf(html: str) -> str:
    found = CSRF.search(html)
    assert found, html[:500]
    return found.group(1)


async def sign_in(client: httpx.AsyncClient, platform: Platform, role: str) -> tuple[str, str]:
    """A new operator signed in fully (enrolled); returns (email, TOTP secret)."""
    email, once, _ = await make_operator(platform, role)
    page = await client.get("/admin/login")
    done = await client.post("/admin/login", data={"csrf": csrf(page.text), "email": email, "password": once})
    assert done.status_code == 303 and done.headers["location"] == "/admin/enrol"
    assert (await client.get("/admin")).headers["location"] == "/admin/enrol"  # nothing before TOTP
    enrol = await client.get("/admin/enrol")
    secret = re.search(r'id="totp-secret">([A-Z2-7]+)<', enrol.text)
    assert secret and "<svg" in enrol.text
    codes = await client.post(
        "/admin/enrol",
        data={
            "csrf": csrf(enrol.text),
            "code": code_now(secret.group(1)),
            "new_password": "console-password-1",
        },
    )
    assert codes.status_code == 200 and 'id="recovery-codes"' in codes.text
    return email, secret.group(1)


async def test_sign_in_needs_totp_and_a_wrong_code_is_refused(
    client: httpx.AsyncClient, platform: Platform
) -> None:
    email, secret = await sign_in(client, platform, "viewer")
    assert (await client.get("/admin")).status_code == 200
    page = await client.get("/admin")
    await client.post("/admin/logout", data={"csrf": csrf(page.text)})
    assert (await client.get("/admin")).headers["location"] == "/admin/login"
    login = await client.get("/admin/login")
    again = await client.post(
        "/admin/login", data={"csrf": csrf(login.text), "email": email, "password": "console-password-1"}
    )
    assert again.headers["location"] == "/admin/totp"
    form = await client.get("/admin/totp")
    wrong = await client.post("/admin/totp", data={"csrf": csrf(form.text), "code": "000000"})
    assert wrong.status_code == 401
    ok = await client.post("/admin/totp", data={"csrf": csrf(form.text), "code": code_now(secret, 1)})
    assert ok.status_code == 303 and ok.headers["location"] == "/admin"


async def test_a_role_without_the_permission_gets_403_naming_it(
    client: httpx.AsyncClient, platform: Platform
) -> None:
    await sign_in(client, platform, "support")
    refused = await client.get("/admin/audit")
    assert refused.status_code == 403 and "audit.read" in refused.text
    assert (await client.get("/admin")).status_code == 403  # the overview needs reports.read


async def test_credit_once_and_the_audit_trail(
    client: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    email, _ = await sign_in(client, platform, "owner")
    secret_key = await account.key()
    found = await client.get("/admin/customers", params={"q": account.email})
    assert f"/admin/customers/{account.customer_id}" in found.text
    page = await client.get(f"/admin/customers/{account.customer_id}")
    assert secret_key not in page.text
    form = {"csrf": csrf(page.text), "form_token": TOKEN.search(page.text).group(1)}  # type: ignore[union-attr]
    form |= {"direction": "credit", "amount": "12.50", "reason": "apology"}
    first = await client.post(f"/admin/customers/{account.customer_id}/wallet", data=form)
    assert first.status_code == 303
    second = await client.post(f"/admin/customers/{account.customer_id}/wallet", data=form)
    assert second.status_code == 409
    page = await client.get(f"/admin/customers/{account.customer_id}")
    assert 'id="balance">$12.50<' in page.text
    audit = await client.get("/admin/audit", params={"actor": email})
    assert "operator_wallet_credit" in audit.text and f"customer:{account.customer_id}" in audit.text
    exported = await client.get(
        "/admin/audit.csv", params={"actor": email, "action": "operator_wallet_credit"}
    )
    assert exported.headers["content-type"].startswith("text/csv")
    lines = exported.text.strip().splitlines()
    assert lines[0].startswith("id,at,actor") and len(lines) == 2 and "operator_wallet_credit" in lines[1]
    assert secret_key not in exported.text and account.password not in exported.text


async def test_tickets_inbox_reply_and_close(
    client: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    key = await account.key()
    opened = await client.post(
        "/api/v1/customer/tickets",
        json={"subject": "console ticket", "message": "my proxy is slow"},
        headers={"Authorization": f"Bearer {key}"},
    )
    assert opened.status_code in (200, 201), opened.text
    tid = opened.json()["ticket_id"]
    email, _ = await sign_in(client, platform, "support")
    inbox = await client.get("/admin/tickets", params={"status": "open"})
    assert f"/admin/tickets/{tid}" in inbox.text
    page = await client.get(f"/admin/tickets/{tid}")
    assert "my proxy is slow" in page.text
    token = TOKEN.search(page.text).group(1)  # type: ignore[union-attr]
    sent = await client.post(
        f"/admin/tickets/{tid}/reply",
        data={"csrf": csrf(page.text), "form_token": token, "message": "looking now"},
    )
    assert sent.status_code == 303
    again = await client.post(
        f"/admin/tickets/{tid}/reply",
        data={"csrf": csrf(page.text), "form_token": token, "message": "looking now"},
    )
    assert again.status_code == 409  # the same form: one reply
    page = await client.get(f"/admin/tickets/{tid}")
    assert page.text.count("looking now") == 1
    close_token = re.findall(r'name="form_token" value="([^"]+)"', page.text)[1]
    closed = await client.post(
        f"/admin/tickets/{tid}/close", data={"csrf": csrf(page.text), "form_token": close_token}
    )
    assert closed.status_code == 303
    customer_view = await client.get(
        f"/api/v1/customer/tickets/{tid}", headers={"Authorization": f"Bearer {key}"}
    )
    body = customer_view.json()
    assert body["status"] == "closed" and [m["body"] for m in body["messages"]][-1] == "looking now"
    # the support role may not credit: the customer page shows no wallet form, and the post is refused
    customer = await client.get(f"/admin/customers/{account.customer_id}")
    assert "Credit or debit the wallet" not in customer.text
    refused = await client.post(
        f"/admin/customers/{account.customer_id}/wallet",
        data={"csrf": csrf(customer.text), "direction": "credit", "amount": "1", "reason": "x"},
    )
    assert refused.status_code == 403 and "wallet.credit" in refused.text


async def test_stock_and_nodes_pages(client: httpx.AsyncClient, platform: Platform) -> None:
    from datetime import timedelta

    from proxyplane.core.clock import utcnow
    from proxyplane.storage.models.gateway_health import GatewayNodeConnections
    from tests.domains.stock.support import fresh_stock

    await fresh_stock(platform, "proxy_isp", "DE", 2)
    node_id = f"node-{uuid.uuid4().hex[:8]}"
    async with platform.db.unit_of_work() as uow:  # a node's connection report, as a gateway writes it
        uow.session.add(
            GatewayNodeConnections(
                node_id=node_id, counts={"a": 3, "b": 4}, updated_at=utcnow() - timedelta(seconds=5)
            )
        )
        await uow.commit()
    await sign_in(client, platform, "viewer")
    stock = await client.get("/admin/stock")
    assert stock.status_code == 200 and "proxy_isp" in stock.text
    nodes = await client.get("/admin/nodes")
    assert nodes.status_code == 200 and node_id in nodes.text and "7 open connections" in nodes.text


async def test_sessions_listed_and_ended_from_the_console(
    client: httpx.AsyncClient, platform: Platform
) -> None:
    email, secret = await sign_in(client, platform, "viewer")
    other = httpx.AsyncClient(transport=client._transport, base_url="http://testserver")  # a second browser
    async with other:
        login = await other.get("/admin/login")
        await other.post(
            "/admin/login", data={"csrf": csrf(login.text), "email": email, "password": "console-password-1"}
        )
        code = await other.get("/admin/totp")
        await other.post("/admin/totp", data={"csrf": csrf(code.text), "code": code_now(secret, 1)})
        assert (await other.get("/admin/sessions")).status_code == 200
        page = await client.get("/admin/sessions")
        ids = re.findall(r'name="session_id" value="([0-9a-f]{64})"', page.text)
        assert len(ids) == 2 and "this browser" in page.text
        mine = re.search(r"this browser", page.text)
        assert mine is not None
        # end the other browser's session: the one not marked as this browser
        current = page.text[: mine.start()].count(
            'name="session_id"'
        )  # sessions listed before "this browser"
        others = [sid for i, sid in enumerate(ids) if i != current]
        ended = await client.post(
            "/admin/sessions/revoke", data={"csrf": csrf(page.text), "session_id": others[0]}
        )
        assert ended.status_code == 303
        assert (await other.get("/admin/sessions")).headers["location"] == "/admin/login"
        assert (await client.get("/admin/sessions")).status_code == 200
