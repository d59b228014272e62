"""`proxyplane admin ticket list|show|reply|close`; an operator reply emits ticket.replied."""

import asyncio
import json

import pytest
from click.testing import CliRunner
from sqlalchemy import select

from proxyplane.cli import main
from proxyplane.core.settings import Settings, get_settings
from proxyplane.domains.tickets import service as tickets
from proxyplane.domains.webhooks import service as hooks
from proxyplane.platform import Platform
from proxyplane.storage.engine import Database
from proxyplane.storage.models import Event, WebhookDelivery
from tests.support import make_account


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


def test_operator_answers_ticket(cli, database_url: str, tmp_path) -> None:
    settings = Settings(
        home=tmp_path, database_url=database_url, secret_key="k", webhooks_allow_http_loopback=True
    )

    async def setup() -> tuple[str, int, str]:
        platform = Platform(settings, Database(database_url))
        account = await make_account(platform)
        async with platform.db.unit_of_work() as uow:
            t = await tickets.open_ticket(uow.session, account.customer_id, "Help", "my proxy is down")
            ep, _ = await hooks.create_endpoint(
                uow.session,
                platform.secrets,
                account.customer_id,
                "http://127.0.0.1:9/",
                "",
                ["ticket.replied"],
                True,
            )
            await uow.commit()
        await platform.close()
        return str(t.id), account.customer_id, account.email

    ticket_id, customer_id, email = asyncio.run(setup())
    code, out, _ = cli("admin", "ticket", "list", "--email", email)
    listed = json.loads(out)
    assert (
        code == 0
        and [t["ticket_id"] for t in listed["items"]] == [ticket_id]
        and listed["items"][0]["status"] == "open"
    )
    code, out, _ = cli("admin", "ticket", "list", "--email", email, "--assigned", "nobody")
    assert code == 0 and [(t["ticket_id"], t["assigned_to"]) for t in json.loads(out)["items"]] == [
        (ticket_id, None)
    ]
    code, _, err = cli("admin", "ticket", "list", "--assigned", "me")  # the host's CLI is no operator
    assert code != 0 and "'me' needs a signed-in operator" in err
    code, out, _ = cli("admin", "ticket", "reply", ticket_id, "--message", "rebooted it, try now")
    shown = json.loads(out)
    assert code == 0 and shown["status"] == "answered"
    assert [(m["author"], m["body"]) for m in shown["messages"]][-1] == ("support", "rebooted it, try now")
    code, out, _ = cli("admin", "ticket", "show", ticket_id)
    assert code == 0 and len(json.loads(out)["messages"]) == 2
    code, out, _ = cli("admin", "ticket", "close", ticket_id)
    assert code == 0 and json.loads(out)["status"] == "closed"
    code, _, err = cli("admin", "ticket", "show", "not-a-uuid")
    assert code != 0 and "not a ticket id" in err

    async def events() -> tuple[list[dict], int]:
        db = Database(database_url)
        async with db.unit_of_work(write=False) as uow:
            rows = (
                (
                    await uow.session.execute(
                        select(Event).where(Event.customer_id == customer_id, Event.type == "ticket.replied")
                    )
                )
                .scalars()
                .all()
            )
            queued = len(
                (
                    await uow.session.execute(
                        select(WebhookDelivery).where(WebhookDelivery.customer_id == customer_id)
                    )
                )
                .scalars()
                .all()
            )
        await db.dispose()
        return [r.data for r in rows], queued

    data, queued = asyncio.run(events())
    assert [(d["ticket_id"], d["message"]) for d in data] == [(ticket_id, "rebooted it, try now")]
    assert queued == 1
