"""CPU per OAuth access-token check on the MCP endpoint (issue 20.2): `domains/oauth.authenticate_token`,
which reads the token's row on every request (no cache, so a revocation is refused at once).

    python bench/oauth_token_check.py                   # a fresh SQLite file, 2,000 checks
    python bench/oauth_token_check.py --pg postgresql://postgres@127.0.0.1:55432/pp_g_bench --checks 5000

Set-up: a migrated, emptied database (its schema is DROPPED on PostgreSQL), one customer with one grant and
one live access token, plus `--grants` other grants (so the look-up is by index, not in a tiny table).
Measured: process CPU time and wall time per check (sequential, one process) of the current check and of
the previous one (`orm_check` below: an ORM unit of work, the same joins, conditions in Python), in
alternating blocks so that both see the same machine load; then a revocation followed by one check of each
that must be refused. The machine is shared: figures are noisy, the ratio of the two is the figure to quote.
"""

from __future__ import annotations

import os
import sys

# run as `python bench/oauth_token_check.py`, bench/platform.py would shadow the standard library's module
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]
sys.path.insert(0, os.path.dirname(_HERE))

import argparse  # noqa: E402
import asyncio  # noqa: E402
import statistics  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

from sqlalchemy import select  # noqa: E402

from bench.fresh_db import fresh_database  # noqa: E402
from proxyplane.core.clock import utcnow  # noqa: E402
from proxyplane.core.scopes import ALL_SCOPES  # noqa: E402
from proxyplane.domains.accounts.service import create_customer  # noqa: E402
from proxyplane.domains.oauth import clients, service  # noqa: E402
from proxyplane.storage.engine import Database  # noqa: E402
from proxyplane.storage.models import ApiKey, Customer  # noqa: E402
from proxyplane.storage.models.oauth import OAuthGrant, OAuthToken  # noqa: E402

RESOURCE = "http://127.0.0.1:8000/api/v1/mcp"
CLIENT = "http://127.0.0.1:9/client.json"


async def orm_check(db: Database, raw: str, resource: str) -> int | None:
    """The check as it was before issue 20.2 (the reference): the customer id of a live token, or None."""
    async with db.unit_of_work(write=False) as uow:
        row = (
            await uow.session.execute(
                select(
                    OAuthToken.scopes,
                    OAuthToken.expires_at,
                    OAuthToken.revoked_at,
                    OAuthGrant.id,
                    OAuthGrant.client_id,
                    OAuthGrant.resource,
                    OAuthGrant.confirm_spending,
                    OAuthGrant.revoked_at,
                    ApiKey.id,
                    ApiKey.customer_id,
                    ApiKey.scopes,
                    ApiKey.revoked_at,
                    Customer.status,
                )
                .join(OAuthGrant, OAuthGrant.id == OAuthToken.grant_id)
                .join(ApiKey, ApiKey.id == OAuthGrant.api_key_id)
                .join(Customer, Customer.id == ApiKey.customer_id)
                .where(OAuthToken.token_hash == service.digest(raw), OAuthToken.kind == "access")
            )
        ).first()
    if row is None or row[2] is not None or row[7] is not None or row[11] is not None or row[12] != "active":
        return None
    if row[1] <= utcnow() or row[5].rstrip("/") != resource.rstrip("/"):
        return None
    return int(row[9])


async def current_check(db: Database, raw: str, resource: str) -> int | None:
    principal = await service.authenticate_token(db, raw, resource)
    return None if principal is None else principal.customer_id


async def grant_token(db: Database, customer_id: int) -> tuple[str, object]:
    """A consented grant's first access token (the domain steps of /authorize, consent and /token)."""
    async with db.unit_of_work() as uow:
        request_id = await service.start_request(
            uow.session, CLIENT, "http://127.0.0.1:9/cb", True, "s", "c" * 43, sorted(ALL_SCOPES), RESOURCE
        )
        row, code = await service.approve(
            uow.session, request_id, customer_id, "bench", ALL_SCOPES, None, None, False
        )
        issued = await service.exchange_code(uow.session, code)
        await uow.commit()
    assert issued is not None
    return issued.access_token, row.grant_id


async def run(url: str, checks: int, grants: int) -> None:
    await fresh_database(url)
    db = Database(url)
    async with db.unit_of_work() as uow:
        customer = await create_customer(uow.session, "bench-oauth@example.com", "correct horse 1")
        await clients.store_client(uow.session, CLIENT, "cimd", {"client_id": CLIENT, "redirect_uris": []})
        await uow.commit()
        customer_id = customer.id
    for _ in range(grants):  # other tokens in the table (each consent ends the client's earlier grant)
        await grant_token(db, customer_id)
    token, grant_id = await grant_token(db, customer_id)
    checks_of = {"current": current_check, "before (ORM)": orm_check}
    cpu = dict.fromkeys(checks_of, 0.0)
    walls: dict[str, list[float]] = {name: [] for name in checks_of}
    for check in checks_of.values():  # warm-up: connection pool, statement caches
        for _ in range(50):
            assert await check(db, token, RESOURCE) == customer_id
    blocks = 10
    for _ in range(blocks):  # alternate, so that both see the same load
        for name, check in checks_of.items():
            cpu0 = time.process_time()
            for _ in range(checks // blocks):
                t0 = time.perf_counter()
                assert await check(db, token, RESOURCE) == customer_id
                walls[name].append(time.perf_counter() - t0)
            cpu[name] += time.process_time() - cpu0
    async with db.unit_of_work() as uow:
        await service.revoke_grant(uow.session, customer_id, grant_id)  # type: ignore[arg-type]
        await uow.commit()
    refused = all([await check(db, token, RESOURCE) is None for check in checks_of.values()])
    engine = url.split(":", 1)[0]
    for name in checks_of:
        n = len(walls[name])
        ordered = sorted(walls[name])
        print(
            f"{engine} {name}: {n} checks: CPU {cpu[name] / n * 1e6:.0f} µs/check, "
            f"wall p50 {statistics.median(ordered) * 1e6:.0f} µs, p99 {ordered[int(n * 0.99)] * 1e6:.0f} µs"
        )
    print(
        f"{engine}: CPU before/current {cpu['before (ORM)'] / cpu['current']:.2f}x; "
        f"refused right after revocation: {refused}"
    )
    await db.dispose()
    if not refused:
        raise SystemExit("a revoked token was accepted")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pg", help="a PostgreSQL URL of your own *_bench database (its schema is dropped)")
    parser.add_argument("--checks", type=int, default=2000)
    parser.add_argument("--grants", type=int, default=200)
    args = parser.parse_args()
    if args.pg:
        url = args.pg.replace("postgresql://", "postgresql+asyncpg://", 1)
        asyncio.run(run(url, args.checks, args.grants))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            asyncio.run(run(f"sqlite+aiosqlite:///{tmp}/bench.db", args.checks, args.grants))


if __name__ == "__main__":
    main()
