"""The mail job against a real SMTP server on loopback (aiosmtpd): notifications arrive once each with
the right links and RFC 8058 one-click unsubscribe; SMTP down for a while -> delivered after, once; a
refused message is failed with the server's answer for the operator; no SMTP: messages wait in the
outbox."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest
from sqlalchemy import select

from proxyplane.domains.mail import operator_ops
from proxyplane.domains.tickets import service as tickets
from proxyplane.domains.wallet import service as wallet
from proxyplane.jobs.mail import MailWorker
from proxyplane.jobs.mail_pass import notify_pass
from proxyplane.jobs.smtp import parse_smtp_url
from proxyplane.ops import Caller, invoke
from proxyplane.platform import Platform
from proxyplane.storage.models.mail import EmailMessage
from tests.jobs.mail_support import deliver, mailing
from tests.jobs.smtp_sink import free_port, link, parts, smtp_sink, starttls_sink
from tests.support import Account, bearer, make_account

pytestmark = pytest.mark.anyio
# the host's command line, as cli/common.operator_call calls (a local owner once operators have roles)
CLI = Caller(
    customer_id=None,
    channel="cli",
    **({"role": "owner", "actor": "cli"} if "role" in Caller.__dataclass_fields__ else {}),  # type: ignore[arg-type]
)


async def _outbox(platform: Platform, to: str) -> list[EmailMessage]:
    async with platform.db.unit_of_work(write=False) as uow:
        rows = await uow.session.execute(
            select(EmailMessage).where(EmailMessage.to_address == to).order_by(EmailMessage.id)
        )
        return list(rows.scalars())


async def _ticket_answered(platform: Platform, account: Account) -> None:
    async with platform.db.unit_of_work() as uow:
        ticket = await tickets.open_ticket(uow.session, account.customer_id, "Where is my IP?", "Hello")
        await tickets.reply(uow.session, ticket, tickets.SUPPORT, "It is on the services page.")
        await uow.commit()


def test_smtp_urls() -> None:
    plain = parse_smtp_url("smtp://127.0.0.1")
    assert (plain.port, plain.implicit_tls, plain.starttls, plain.username) == (25, False, False, None)
    tls = parse_smtp_url("smtp+starttls://me%40x.test:p%3Ass@127.0.0.1?timeout=3")
    assert (tls.port, tls.starttls, tls.username, tls.password, tls.timeout) == (
        587,
        True,
        "me@x.test",
        "p:ss",
        3,
    )
    assert parse_smtp_url("smtps://u:p@127.0.0.1:2465").implicit_tls
    assert parse_smtp_url("smtp+starttls://127.0.0.1?ca=/etc/relay-ca.pem").ca_file == "/etc/relay-ca.pem"
    with pytest.raises(ValueError):
        parse_smtp_url("http://127.0.0.1")


async def test_notifications_arrive_once_with_links_and_one_click_unsubscribe(
    platform: Platform, client: httpx.AsyncClient
) -> None:
    account = await make_account(platform)
    key = await account.key(name="deploy")  # api_key.created
    r = await client.patch(
        "/api/v1/customer/me/notifications", json={"balance_low_threshold_cents": 500}, headers=bearer(key)
    )
    assert r.status_code == 200 and r.json()["email"]["api_key_created"] is True
    await account.credit(1000)
    async with platform.db.unit_of_work() as uow:  # wallet.balance_low: 1000 -> 400
        await wallet.debit(uow.session, account.customer_id, 600, "adjustment", "test debit")
        await uow.commit()
    await _ticket_answered(platform, account)  # ticket.replied
    with smtp_sink() as (sink, url):
        sender = mailing(platform, url)
        for _ in range(3):  # however often the job runs
            await deliver(sender)
        got = {m["Subject"]: m for m in sink.to(account.email)}
        assert len(sink.to(account.email)) == 3, [m["Subject"] for m in sink.to(account.email)]
        assert set(got) == {
            "API key “deploy” created",
            "Your balance is $4.00",
            "Support answered: Where is my IP?",
        }
        key_mail = got["API key “deploy” created"]
        assert link(key_mail, "/keys") == "http://testserver/keys"
        assert "It is on the services page." in parts(got["Support answered: Where is my IP?"])[0]
        assert key_mail["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
        unsubscribe = key_mail["List-Unsubscribe"].strip("<>")
        assert unsubscribe.startswith("http://testserver/unsubscribe/")
        # RFC 8058: the mail client POSTs "List-Unsubscribe=One-Click", with no cookie and no form token
        async with httpx.AsyncClient(transport=client._transport, base_url="http://testserver") as bare:
            one_click = await bare.post(
                unsubscribe.removeprefix("http://testserver"),
                content=b"List-Unsubscribe=One-Click",
                headers={"content-type": "application/x-www-form-urlencoded"},
            )
        assert one_click.status_code == 200 and "Unsubscribed" in one_click.text
        after = await client.get("/api/v1/customer/me/notifications", headers=bearer(key))
        assert after.json()["email"]["api_key_created"] is False
        assert after.json()["email"]["ticket_replied"] is True
        await account.key(name="second")  # off now: no email
        await _ticket_answered(platform, account)  # still on: one more
        await deliver(sender)
        subjects = [m["Subject"] for m in sink.to(account.email)]
        assert len(subjects) == 4 and subjects.count("Support answered: Where is my IP?") == 2
    forged = await client.get("/unsubscribe/1.api_key_created.0000")
    assert forged.status_code == 404


async def test_smtp_down_for_a_while_then_delivered_once(platform: Platform) -> None:
    account = await make_account(platform)
    await account.key(name="while down")
    host = "127.0.0.35"
    port = free_port(host)  # nothing listens there yet
    sender = mailing(platform, f"smtp://{host}:{port}")
    stop = asyncio.Event()
    worker = MailWorker(sender, name="down-then-up")
    task = asyncio.create_task(worker.run_forever(stop))
    try:
        for _ in range(200):
            rows = await _outbox(platform, account.email)
            if rows and rows[0].attempts >= 2:
                break
            await asyncio.sleep(0.05)
        assert rows and rows[0].status in ("pending", "sending") and rows[0].attempts >= 2
        assert rows[0].last_error is not None  # the connection error, kept for the operator
        with smtp_sink(host, port) as (sink, _):
            got = await sink.await_for(account.email)
            await asyncio.sleep(1.0)  # more passes: nothing is sent twice
            assert len(sink.to(account.email)) == 1 == len(got)
    finally:
        stop.set()
        await asyncio.wait_for(task, 10)
        await worker.close()
    row = (await _outbox(platform, account.email))[0]
    assert row.status == "sent" and row.sent_at is not None and row.attempts >= 2


async def test_refused_message_is_failed_with_the_server_answer(platform: Platform) -> None:
    account = await make_account(platform)
    await account.key(name="refused")
    with smtp_sink() as (sink, url):
        sink.refuse[account.email] = "550 5.1.1 mailbox unavailable"
        sender = mailing(platform, url)
        await deliver(sender)
        await deliver(sender)
        assert sink.to(account.email) == []
    rows = await _outbox(platform, account.email)
    assert [(r.status, r.attempts) for r in rows] == [("failed", 1)]  # 5xx: not retried
    listed = await invoke(platform, operator_ops.OUTBOX_LIST, CLI, operator_ops.OutboxQuery(to=account.email))
    assert listed["items"][0]["server_answer"] == "550 5.1.1 mailbox unavailable"
    shown = await invoke(
        platform, operator_ops.OUTBOX_SHOW, CLI, operator_ops.MessageRef(message_id=rows[0].id)
    )
    assert shown["status"] == "failed" and "deploy" not in shown["text"] and "refused" in shown["text"]
    with smtp_sink() as (sink, url):  # the operator fixed it: retry sends it
        retried = await invoke(
            platform, operator_ops.OUTBOX_RETRY, CLI, operator_ops.MessageRef(message_id=rows[0].id)
        )
        assert retried["retried"] is True
        await deliver(mailing(platform, url))
        assert len(sink.to(account.email)) == 1


async def test_an_unsendable_address_fails_alone(platform: Platform) -> None:
    """An outbox row whose address the SMTP client will not put on the wire ('<>' in it, e.g. an
    invitation someone typed so) is failed with the reason; the rest of the batch still goes out."""
    from proxyplane.domains.mail.compose import Mail
    from proxyplane.domains.mail.outbox import queue

    account = await make_account(platform)
    odd = f"<>{account.customer_id}@example.com"
    async with platform.db.unit_of_work() as uow:
        mail = Mail(kind="team_invitation", to=odd, subject="Join", text="hello", html="<p>hello</p>")
        await queue(uow.session, mail, sender=platform.settings.mail_from, customer_id=None)
        await uow.commit()
    await account.key(name="after the odd one")
    with smtp_sink() as (sink, url):
        await deliver(mailing(platform, url))
        assert len(sink.to(account.email)) == 1
    [row] = await _outbox(platform, odd)
    assert row.status == "failed" and row.last_error is not None and "not sent" in row.last_error


async def test_without_smtp_messages_wait_in_the_outbox(platform: Platform) -> None:
    account = await make_account(platform)
    await account.key(name="no smtp")
    quiet = mailing(platform, "")
    assert await deliver(quiet) == 0  # nothing to send through
    await notify_pass(quiet)
    rows = await _outbox(platform, account.email)
    assert [(r.kind, r.status, r.attempts) for r in rows] == [("api_key_created", "pending", 0)]
    listed = await invoke(platform, operator_ops.OUTBOX_LIST, CLI, operator_ops.OutboxQuery(status="pending"))
    assert any(item["to"] == account.email for item in listed["items"])


async def test_new_address_sign_in_and_quota_events_are_mailed_once(platform: Platform) -> None:
    from proxyplane.domains.accounts import web_ops
    from proxyplane.domains.events.catalogue import EVENT_TYPES
    from proxyplane.domains.events.service import emit

    account = await make_account(platform)
    credential = web_ops.SignIn(email=account.email, password=account.password)
    for ip in ("127.0.0.51", "127.0.0.51", "127.0.0.52", "127.0.0.52"):  # the first ever, known, new, known
        caller = Caller(customer_id=None, client_ip=ip, channel="web", user_agent="Firefox/999")
        assert (await invoke(platform, web_ops.SIGN_IN, caller, credential)).outcome == "ok"
    async with platform.db.unit_of_work() as uow:
        data = {"service_id": "7d1f6a52-3a0c-4d8e-9a53-3c0a6f1b2c11", "number": 7, "percent": 80}
        await emit(uow.session, account.customer_id, "service.quota_80", data)
        await uow.commit()
    with smtp_sink() as (sink, url):
        sender = mailing(platform, url)
        await deliver(sender)
        await deliver(sender)
        subjects = sorted(str(m["Subject"]).strip() for m in sink.to(account.email))  # unfolded
    assert subjects[0] == EVENT_TYPES["service.quota_80"].rstrip(".")
    assert subjects[1] == "New sign-in to your ProxyPlane account from 127.0.0.52"
    assert len(subjects) == 2


async def test_starttls_and_auth_through_a_relay_that_requires_them(
    platform: Platform, tmp_path: Path
) -> None:
    """smtp+starttls://user:pass@host:port?ca=FILE against aiosmtpd requiring STARTTLS then AUTH: the
    message goes over TLS (the certificate verified against the given CA, host name included) with the
    percent-decoded login; a wrong password is the relay's fault, not the message's: it stays pending (the
    server's answer kept) and goes out once the credentials are right."""
    account = await make_account(platform)
    await account.key(name="over tls")
    with starttls_sink(tmp_path, "mailer@pp.test", "p:ss word") as (sink, port, ca):
        wrong = mailing(platform, f"smtp+starttls://mailer%40pp.test:nope@127.0.0.36:{port}?ca={ca}")
        await deliver(wrong, passes=1)
        [row] = await _outbox(platform, account.email)
        assert row.status == "pending" and row.attempts == 1 and (row.last_error or "").startswith("535")
        untrusted = mailing(platform, f"smtp+starttls://mailer%40pp.test:p%3Ass%20word@127.0.0.36:{port}")
        await asyncio.sleep(0.3)  # past the retry backoff
        await deliver(untrusted, passes=1)  # the system's CAs do not know the relay: not sent
        [row] = await _outbox(platform, account.email)
        assert row.status == "pending" and "certificate" in (row.last_error or "").lower()
        assert sink.to(account.email) == []
        right = mailing(platform, f"smtp+starttls://mailer%40pp.test:p%3Ass%20word@127.0.0.36:{port}?ca={ca}")
        await asyncio.sleep(0.3)
        await deliver(right)
        assert len(sink.to(account.email)) == 1 and sink.sessions[-1] == (True, b"mailer@pp.test")
    [row] = await _outbox(platform, account.email)
    assert row.status == "sent" and row.attempts == 3
