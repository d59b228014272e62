"""`proxyplane admin outbox list|show`: with no SMTP configured the operator reads a sign-up's
verification link from the outbox (the real command, through the cli door)."""

import asyncio
import json
import re

import pytest
from click.testing import CliRunner

from proxyplane.cli import main
from proxyplane.core.settings import Settings, get_settings
from proxyplane.domains.accounts import web_ops
from proxyplane.ops import Caller, invoke
from proxyplane.platform import Platform
from proxyplane.storage.engine import Database
from tests.support import unique_email


@pytest.fixture
def cli(database_url: str, tmp_path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("PROXYPLANE_DATABASE_URL", database_url)
    monkeypatch.setenv("PROXYPLANE_HOME", str(tmp_path))
    get_settings.cache_clear()
    runner = CliRunner()

    def call(*args: str) -> tuple[int, str, str]:
        r = runner.invoke(main, list(args))
        return r.exit_code, r.stdout, r.stderr

    yield call
    get_settings.cache_clear()


def test_operator_reads_the_verification_link(cli, database_url: str, tmp_path) -> None:
    settings = Settings(
        home=tmp_path, database_url=database_url, secret_key="k", public_base_url="http://pp.test"
    )
    email = unique_email()

    async def sign_up() -> None:
        platform = Platform(settings, Database(database_url))
        anonymous = Caller(customer_id=None, client_ip="127.0.0.9", channel="web")
        await invoke(
            platform, web_ops.SIGN_UP, anonymous, web_ops.SignUp(email=email, password="a password 1")
        )
        await platform.close()

    asyncio.run(sign_up())
    code, out, err = cli("admin", "outbox", "list", "--to", email)
    assert code == 0, err
    items = json.loads(out)["items"]
    assert [(i["kind"], i["status"], i["subject"]) for i in items] == [
        ("verify_email", "pending", "Confirm your email address")
    ]
    code, out, err = cli("admin", "outbox", "show", str(items[0]["id"]))
    assert code == 0, err
    shown = json.loads(out)
    assert re.search(r"http://pp\.test/verify-email/\S+", shown["text"])
    assert shown["html"].startswith("<!doctype html>")
    code, out, err = cli("admin", "outbox", "show", "999999999")
    assert code != 0 and "no message 999999999" in (out + err)


def test_operator_sees_the_smtp_servers_refusal_and_retries(cli, database_url: str, tmp_path) -> None:
    """A message a real SMTP server (aiosmtpd on loopback) refused: `admin outbox list --status failed`
    shows it failed with the server's answer, `show` too, and `retry` makes it due again."""
    from tests.jobs.mail_support import deliver, mailing
    from tests.jobs.smtp_sink import smtp_sink

    settings = Settings(
        home=tmp_path, database_url=database_url, secret_key="k", public_base_url="http://pp.test"
    )
    email = unique_email()

    async def sign_up_and_send(url: str) -> None:
        platform = Platform(settings, Database(database_url))
        anonymous = Caller(customer_id=None, client_ip="127.0.0.9", channel="web")
        await invoke(
            platform, web_ops.SIGN_UP, anonymous, web_ops.SignUp(email=email, password="a password 1")
        )
        await deliver(mailing(platform, url), passes=2)
        await platform.close()

    with smtp_sink() as (sink, url):
        sink.refuse[email] = f"550 5.1.1 <{email}>: Recipient address rejected"
        asyncio.run(sign_up_and_send(url))
        assert sink.to(email) == []
    code, out, err = cli("admin", "outbox", "list", "--status", "failed", "--to", email)
    assert code == 0, err
    [item] = json.loads(out)["items"]
    assert (item["kind"], item["status"], item["attempts"]) == ("verify_email", "failed", 1)
    assert item["server_answer"] == f"550 5.1.1 <{email}>: Recipient address rejected"
    code, out, err = cli("admin", "outbox", "show", str(item["id"]))
    assert code == 0, err
    assert json.loads(out)["server_answer"] == item["server_answer"]
    code, out, err = cli("admin", "outbox", "retry", str(item["id"]))
    assert code == 0 and json.loads(out)["retried"] is True, err
    code, out, err = cli("admin", "outbox", "list", "--to", email)
    assert json.loads(out)["items"][0]["status"] == "pending"
