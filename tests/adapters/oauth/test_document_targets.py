"""Where the server fetches a client ID metadata document from (h3's review): the client_id URL is anyone's
input on /oauth/authorize (no sign-in needed), so the fetch follows the webhooks' rule
(domains/webhooks/targets.py): https to public addresses only, checked before connecting and then pinned
to the checked address. With the development setting off, a loopback or private address is never
dialled at all."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import httpx
import pytest

from proxyplane.core.settings import Settings
from tests.adapters.oauth.conftest import BASE, authorize, pkce

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def settings(tmp_path_factory: pytest.TempPathFactory, database_url: str) -> Settings:
    """This module's platform: the production rule (no loopback client ID documents)."""
    return Settings(
        home=tmp_path_factory.mktemp("oauth-targets"),
        database_url=database_url,
        secret_key="test-secret-key",
        api_port=8000,
        public_base_url=BASE,
        oauth_allow_http_client_ids=False,
    )


@pytest.fixture
async def listener() -> AsyncIterator[tuple[int, list[int]]]:
    """A TCP port on loopback that counts the connections it is dialled with."""
    seen: list[int] = []

    async def accepted(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen.append(1)
        writer.close()

    server = await asyncio.start_server(accepted, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    yield port, seen
    server.close()
    await server.wait_closed()


async def test_a_loopback_document_is_never_dialled(
    http: httpx.AsyncClient, listener: tuple[int, list[int]]
) -> None:
    port, seen = listener
    _, challenge = pkce()
    r = await authorize(http, f"https://127.0.0.1:{port}/client.json", challenge)
    assert r.status_code == 400, r.text  # an unknown client: not sent on to the consent page
    await asyncio.sleep(0.05)
    assert seen == []  # refused before any connection


@pytest.mark.parametrize(
    "client_id",
    [
        "https://10.0.0.1/client.json",
        "https://169.254.169.254/latest/meta-data/client.json",
        "https://[::ffff:192.168.0.1]/client.json",
        "https://[fd00::1]/client.json",
        "https://localhost/client.json",
    ],
)
async def test_private_and_link_local_documents_are_refused(http: httpx.AsyncClient, client_id: str) -> None:
    _, challenge = pkce()
    r = await authorize(http, client_id, challenge)
    assert r.status_code == 400, r.text
