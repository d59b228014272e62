"""Pay as you go enforced by a real node (issue 32.4), on loopback through a TCP echo, both tunnel paths:
a service whose wallet is empty is refused (HTTP and CONNECT 402 with ``Proxy-Status: ...;
error=insufficient_balance``, SOCKS5 the failed-auth reply) until a top-up and the renewal job's pass; its
traffic is billed per started unit by the usage flush, so the ledger equals its started units times the rate;
a wallet that cannot pay the next unit cuts the open tunnel at the end of the unit it covers, never taking
the balance below zero, and a top-up serves it again."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import pytest

from proxyplane.core.clock import utcnow
from proxyplane.jobs.payg_pass import payg_pass
from proxyplane.platform import Platform
from tests.domains.quotas.support import errors_of, quota_row
from tests.domains.quotas.test_payg import ledger, payg_service, wallet
from tests.domains.stock.support import fresh_stock
from tests.support import Account, make_account

from .clients import basic, connect_tunnel, http_get, socks_connect
from .conftest import BACKENDS
from .test_quotas import CHUNK, PASSWORD, echo_once, pump
from .test_store_static import eventually, node_settings, running_node

pytestmark = pytest.mark.anyio
UNIT = 4_000_000
BIG = 8_000_000  # a unit more than the store lags behind the node (harvest + flush + poll) at echo speed
RATE = 10


@pytest.fixture(params=BACKENDS, ids=lambda b: "engine" if b[1] else "python")
def anyio_backend(request: Any) -> Any:
    return request.param


async def pump_bytes(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, total: int) -> int:
    """Echo chunks until ``total`` bytes moved (up + down); fails if the tunnel is cut before."""
    moved = 0
    while moved < total:
        assert await echo_once(reader, writer), f"cut after {moved} bytes"
        moved += 2 * len(CHUNK)
        await asyncio.sleep(0.05)
    return moved


async def refused_everywhere(http: Any, socks: Any, target: str, port: int, login: str) -> None:
    auth = basic(login, PASSWORD)
    status, headers, body = await http_get(http, f"http://{target}/", auth)
    assert status == 402 and b"insufficient_balance" in body and b"top up" in body
    assert "error=insufficient_balance" in headers["proxy-status"]
    status, _, _ = await connect_tunnel(http, target, auth)
    assert status == 402
    rep, _, _, w = await socks_connect(socks, "127.0.0.1", port, login, PASSWORD)
    assert rep == "auth-failed"
    w.close()


async def test_payg_billed_per_started_unit_and_refused_without_balance(
    platform: Platform, account: Account, tcp_echo: Any, tmp_path: Any
) -> None:
    await fresh_stock(platform, "proxy_datacenter", "US", 1)
    svc = await payg_service(platform, account, BIG, RATE)  # an empty wallet: refused from the start
    poor = await make_account(platform)
    await poor.credit(RATE + 5)  # one unit and a half
    short = await payg_service(platform, poor, UNIT, RATE)
    target = f"127.0.0.1:{tcp_echo.port}"
    settings = node_settings(["127.0.0.1"]).model_copy(update={"usage_flush_seconds": 0.5})
    async with running_node(platform, settings, tmp_path) as node:
        http = ("127.0.0.1", node.gateway.gateway_port("http"))
        socks = ("127.0.0.1", node.gateway.gateway_port("socks"))
        await refused_everywhere(http, socks, target, tcp_echo.port, svc.login)

        await account.credit(1_000)
        await payg_pass(platform.db)  # the job opens it: the balance covers the next unit

        await eventually(lambda: _serves(http, target, svc.login), within=5.0)
        status, reader, writer = await connect_tunnel(http, target, basic(svc.login, PASSWORD))
        assert status == 200
        moved = await pump_bytes(reader, writer, 12_000_000)  # 2 units started: the flushes keep it open
        writer.close()
        await node.flush_usage()
        await payg_pass(platform.db, utcnow() + timedelta(hours=1))  # this hour's owed units, next hour
        row = await quota_row(platform, svc.service_id)
        assert moved <= row.used_bytes <= moved + 4096, (moved, row.used_bytes)
        entries = await ledger(platform, svc.service_id)
        started = -(-row.used_bytes // BIG)
        print(f"payg: moved {moved} B, metered {row.used_bytes} B, {started} units, ledger {entries}")
        assert -sum(entries) == started * RATE and len(entries) <= 2  # at most one entry per hour
        assert await wallet(platform, account) == 1_000 - started * RATE

        # a wallet that covers one unit: the tunnel is cut at its end, named insufficient_balance
        await payg_pass(platform.db)
        await eventually(lambda: _serves(http, target, short.login), within=5.0)
        status, reader, writer = await connect_tunnel(http, target, basic(short.login, PASSWORD))
        assert status == 200
        cut_after = await pump(reader, writer, within=20)
        writer.close()
        print(f"payg: one unit covered ({UNIT} B), cut after {cut_after} B")
        assert UNIT - 2 * len(CHUNK) <= cut_after <= 2 * UNIT
        await refused_everywhere(http, socks, target, tcp_echo.port, short.login)
        await node.flush_usage()
        assert await wallet(platform, poor) >= 0
        assert await ledger(platform, short.service_id) == [-RATE]
        assert (await errors_of(platform, short.service_id)).get("insufficient_balance", 0) >= 4
        await poor.credit(100)
        await payg_pass(platform.db)
        await eventually(lambda: _serves(http, target, short.login), within=5.0)


async def _serves(http: Any, target: str, login: str) -> bool:
    got, _, _ = await http_get(http, f"http://{target}/", basic(login, PASSWORD))
    return got != 402
