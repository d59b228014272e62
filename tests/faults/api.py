"""The fault tests' API side: `proxyplane serve` as a child process on loopback, funded buyers with keys,
orders over HTTP with their idempotency keys, and the books of those buyers checked afterwards (the
invariants of bench/platform.py, restricted to the test's own customers: the suite shares its store)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import text

from proxyplane.core.scopes import ALL_SCOPES
from proxyplane.platform import Platform
from tests.cli.test_serve_startup_race import free_port, ready
from tests.support import make_account

ORDER = "/api/v1/billing/composite/order"


def start_api(database_url: str, home: Path, port: int | None = None) -> tuple[subprocess.Popen[bytes], int]:
    """`proxyplane serve` alone (no gateway, worker or renewals in it) on 127.0.0.1:port; output to a
    log file in `home` (a pipe nobody reads would stop it)."""
    port = port or free_port()
    home.mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "PROXYPLANE_DATABASE_URL": database_url,
        "PROXYPLANE_SECRET_KEY": "test-secret-key",  # as tests/conftest.py: the suite's keys are valid there
        "PROXYPLANE_HOME": str(home),
        "PROXYPLANE_GATEWAY_IN_SERVE": "false",
        "PROXYPLANE_WORKER_IN_SERVE": "false",
        "PROXYPLANE_RENEWALS_IN_SERVE": "false",
        "PROXYPLANE_GRACEFUL_SHUTDOWN_SECONDS": "5",
    }
    env.pop("PROXYPLANE_LEGACY_PORT", None)
    cli = [sys.executable, "-c", "from proxyplane.cli import main; main()", "serve", "--port", str(port)]
    log = open(home / f"serve-{port}.log", "ab")  # noqa: SIM115 (kept open for the child)
    return subprocess.Popen(cli, env=env, stdout=log, stderr=subprocess.STDOUT), port


def api_log(home: Path) -> str:
    return "".join(p.read_text(errors="replace")[-3000:] for p in sorted(home.glob("serve-*.log")))


async def wait_ready(proc: subprocess.Popen[bytes], port: int, home: Path, within: float = 60.0) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + within
    while loop.time() < end:
        assert proc.poll() is None, api_log(home)
        if await asyncio.to_thread(ready, port):
            return
        await asyncio.sleep(0.2)
    raise AssertionError(f"serve not ready within {within:.0f} s\n{api_log(home)}")


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.kill()
        proc.wait()


async def buyer(platform: Platform, cents: int, cap_cents: int | None = None) -> tuple[int, str]:
    """(customer id, raw API key) of a new funded customer; `cap_cents`: the key has a total spending cap
    (its charges then count in api_key_spending, a statement of the order after the debit)."""
    from proxyplane.domains.apikeys.caps import set_caps
    from proxyplane.domains.apikeys.service import create_key

    account = await make_account(platform)
    await account.credit(cents)
    async with platform.db.unit_of_work() as uow:
        key, raw = await create_key(uow.session, account.customer_id, "faults", frozenset(ALL_SCOPES))
        if cap_cents is not None:
            await set_caps(uow.session, key.id, None, cap_cents)
        await uow.commit()
    return account.customer_id, raw


def order_body(country: str, count: int = 8, key: str | None = None) -> dict[str, Any]:
    return {
        "product_kind": "proxy_datacenter",
        "period_months": 1,
        "segments": [{"country": country, "count": count}],
        "whitelist_ips": ["127.0.0.9"],
        "use_balance": True,
        "idempotency_key": key or uuid.uuid4().hex,
    }


async def place(http: httpx.AsyncClient, raw_key: str, body: dict[str, Any]) -> httpx.Response:
    return await http.post(ORDER, json=body, headers={"Authorization": f"Bearer {raw_key}"})


# each: the number of broken rows among the given customers (:ids)
BOOKS = {
    "negative balance": "SELECT count(*) FROM wallets WHERE customer_id IN :ids AND balance_cents < 0",
    "ledger differs from the balance": """SELECT count(*) FROM wallets w LEFT JOIN (SELECT customer_id,
        sum(amount_cents) t FROM ledger_entries GROUP BY customer_id) l ON l.customer_id = w.customer_id
        WHERE w.customer_id IN :ids AND w.balance_cents <> coalesce(l.t, 0)""",
    "service without its charge": """SELECT count(*) FROM services s LEFT JOIN (SELECT service_id,
        -sum(amount_cents) paid FROM ledger_entries WHERE service_id IS NOT NULL GROUP BY service_id) l
        ON l.service_id = s.service_id
        WHERE s.customer_id IN :ids AND coalesce(l.paid, 0) <> s.period_price_cents""",
    "charge without its service": """SELECT count(*) FROM ledger_entries e WHERE e.customer_id IN :ids
        AND e.amount_cents < 0 AND (e.service_id IS NULL
        OR NOT EXISTS (SELECT 1 FROM services s WHERE s.service_id = e.service_id))""",
    "services not one per order key": """SELECT abs((SELECT count(*) FROM services WHERE customer_id IN :ids)
        - (SELECT count(*) FROM idempotency_records WHERE customer_id IN :ids
           AND operation = 'order_composite'))""",
    "IP count differs from its live allocations": """SELECT count(*) FROM stock_ips s LEFT JOIN (SELECT
        ip_id, count(*) n FROM service_ips WHERE released_at IS NULL GROUP BY ip_id) a ON a.ip_id = s.id
        WHERE s.address IN :addresses AND (s.assigned_count <> coalesce(a.n, 0)
           OR s.assigned_count > s.capacity)""",
}


async def broken_books(platform: Platform, customers: list[int], addresses: list[str]) -> dict[str, int]:
    """Each invariant's broken rows for these customers and stock addresses ({} when all hold)."""
    from sqlalchemy import bindparam

    out: dict[str, int] = {}
    async with platform.db.unit_of_work(write=False) as uow:
        for name, sql in BOOKS.items():
            stmt = text(sql)
            binds = {"ids": customers, "addresses": addresses}
            stmt = stmt.bindparams(*(bindparam(k, expanding=True) for k in binds if f":{k}" in sql))
            bad = int(await uow.session.scalar(stmt, {k: v for k, v in binds.items() if f":{k}" in sql}) or 0)
            if bad:
                out[name] = bad
    return out


async def balance(platform: Platform, customer_id: int) -> int:
    async with platform.db.unit_of_work(write=False) as uow:
        got = await uow.session.scalar(
            text("SELECT balance_cents FROM wallets WHERE customer_id = :c"), {"c": customer_id}
        )
    return int(got or 0)


async def services_of(platform: Platform, customer_id: int) -> list[str]:
    async with platform.db.unit_of_work(write=False) as uow:
        rows = await uow.session.execute(
            text("SELECT service_id FROM services WHERE customer_id = :c"), {"c": customer_id}
        )
    return [str(r[0]) for r in rows]
