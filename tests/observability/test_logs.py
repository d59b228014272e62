"""Logs: JSON lines with the request id the API returns, and no secret in them. A real run (dashboard
sign-up and sign-in, REST with a real and a forged API key, proxy traffic through a gateway node with the
right and a wrong password, a webhook secret, at DEBUG) is captured through ``logs.configure`` and scanned
for every secret it used."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import httpx
import pytest

from proxyplane.core.settings import Settings
from proxyplane.gateway.node import GatewayNode
from proxyplane.observability import logs
from proxyplane.platform import Platform
from tests.adapters.web.helpers import login, signup
from tests.gateway.clients import basic, http_get, socks_connect
from tests.gateway.test_store_static import node_settings
from tests.support import Account, bearer

from .support import static_service
from .test_api import BALANCE

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.model_copy(update={"webhooks_allow_http_loopback": True})


@pytest.fixture
def captured() -> Iterator[io.StringIO]:
    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)
    stream = io.StringIO()
    handler = logs.configure("json", "DEBUG", stream)
    try:
        yield stream
    finally:
        root.removeHandler(handler)
        root.setLevel(level)
        assert root.handlers == handlers


@pytest.mark.parametrize(
    "line, secret",
    [
        ("Authorization: Bearer ppk_abcdef123456", "abcdef123456"),
        ("headers {'authorization': 'Basic dXNlcjpodW50ZXIy'}", "dXNlcjpodW50ZXIy"),
        ("Proxy-Authorization: Basic dXNlcjpwdw==", "dXNlcjpwdw=="),
        ("GET /api/x?key=s3cr3tvalue&limit=5", "s3cr3tvalue"),
        ('body {"email": "a@b.c", "password": "hunter2hunter2"}', "hunter2hunter2"),
        ("upstream http://login1:Pr0xyPass@10.0.0.1:8080/", "Pr0xyPass"),
        ("endpoint secret whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"),
    ],
)
def test_redact(line: str, secret: str) -> None:
    assert secret in line and secret not in logs.redact(line)


async def test_a_real_run_logs_json_with_request_ids_and_no_secret(
    client: httpx.AsyncClient,
    platform: Platform,
    account: Account,
    captured: io.StringIO,
    tmp_path,
) -> None:
    secrets: list[str] = []
    email = await signup(client, password="Sup3r-Secret-Dashboard-Pass")
    secrets.append("Sup3r-Secret-Dashboard-Pass")
    client.cookies.clear()  # signed out: sign in again, right and wrong
    assert (await login(client, email, "Wr0ng-Secret-Guess")).status_code == 401
    assert (await login(client, email, "Sup3r-Secret-Dashboard-Pass")).status_code == 303
    secrets.append("Wr0ng-Secret-Guess")
    svc = await static_service(client, platform, account)
    secrets += [svc.key, svc.password, "ppk_forged0123456789abcdef"]
    ok = await client.get(BALANCE, headers=bearer(svc.key))
    assert ok.status_code == 200
    assert (await client.get(BALANCE, headers=bearer("ppk_forged0123456789abcdef"))).status_code == 401
    hook = await client.post(
        "/api/v1/customer/webhooks",
        json={"url": "http://127.0.0.1:9/hook", "event_types": ["wallet.credited"]},
        headers=bearer(svc.key),
    )
    assert hook.status_code == 201, hook.text
    secrets.append(hook.json()["secret"])
    logging.getLogger("proxyplane.test").warning("a careless line: key=%s %s", svc.key, hook.json()["secret"])

    settings = node_settings([svc.exit_ip])
    node = GatewayNode(platform.db, platform.secrets, settings, home=tmp_path)
    await node.start()
    try:
        proxy = (svc.exit_ip, settings.static_http_port)
        url = "http://127.0.0.1:9/x"
        await http_get(proxy, url, basic(svc.login, svc.password))
        assert (await http_get(proxy, url, basic(svc.login, "Wr0ng-Proxy-Pass")))[0] == 407
        rep, *_, writer = await socks_connect(
            (svc.exit_ip, settings.static_socks_port), "127.0.0.1", 9, svc.login, "Wr0ng-Proxy-Pass"
        )
        writer.close()
        secrets.append("Wr0ng-Proxy-Pass")
    finally:
        await node.close()

    text = captured.getvalue()
    events = [json.loads(line) for line in text.splitlines()]  # one JSON object per line
    assert any(
        e.get("request_id") == ok.headers["x-request-id"] and e["logger"] == "proxyplane.access"
        for e in events
    )
    assert any(e["logger"] == "proxyplane.test" for e in events)
    leaked = [s for s in secrets if s in text]
    assert leaked == []
