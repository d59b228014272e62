"""Issue 15: commits/s of small transactions that write a watched table, with the old trigger functions
(``pg_notify`` inside every logging statement, delivered at commit) vs the new ones (migration 0020i: no
NOTIFY in the transaction; the change notifier sends one per 50 ms tick when the log advanced).

    .venv/bin/python -m bench.notify_commits postgresql://postgres@127.0.0.1:55432/pp_i_bench \
        [--connections 8] [--seconds 5] [--rounds 3]

Migrates the database to head, generates one service per connection (bench/scale/generate.py), then for
each round runs both variants in turn (which goes first alternates; the functions are rewritten in place
with the migration's own pattern): every connection loops ``BEGIN; UPDATE services SET max_connections
= ... WHERE service_id = <its own>; COMMIT`` (no row conflicts between connections; the statement
trigger writes the change log, exactly as an order does). A LISTEN connection (a gateway node) is open
in both variants; in the new one the change notifier runs too. Prints commits/s side by side and the
cluster's fsync and synchronous_commit settings (the NOTIFY lock is held through the WAL flush when
fsync is on). Leaves the database on the new functions.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import time
import uuid
from typing import Any

import asyncpg  # type: ignore[import-untyped]
from sqlalchemy.engine import make_url

from bench.scale.generate import generate, resolved
from proxyplane.jobs.change_notifier import notifier_task
from proxyplane.storage.engine import Database
from proxyplane.storage.migrate import upgrade
from proxyplane.storage.repos.gateway_changes import CHANNEL

MIGRATION = importlib.import_module("proxyplane.storage.migrations.versions.0020i_changes_without_notify")
FUNCTIONS = (
    "SELECT pg_get_functiondef(p.oid) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
    "WHERE p.proname LIKE 'pp\\_log\\_%' AND n.nspname = current_schema()"
)


def with_notify(definition: str) -> str:
    """The old body: the NOTIFY block before the function's LAST `RETURN NULL;`, the end of its logging
    path (migration 0022p added an early `RETURN NULL` for statements with nothing new to log: a block
    placed before that one never ran, and the old variant measured no NOTIFY at all)."""
    last = list(MIGRATION.RETURN_NULL.finditer(definition))[-1]
    return definition[: last.start()] + MIGRATION.NOTIFY_SQL + definition[last.start() :]


async def set_functions(conn: Any, notify: bool) -> int:
    """Rewrite every pp_log_* function with (old) or without (new) the NOTIFY block; returns how many."""
    changed = 0
    for (definition,) in await conn.fetch(FUNCTIONS):
        has = MIGRATION.NOTIFY_BLOCK.search(definition) is not None
        if notify and not has:
            new = with_notify(definition)
        elif not notify and has:
            new = MIGRATION.NOTIFY_BLOCK.sub("", definition)
        else:
            continue
        await conn.execute(new)
        changed += 1
    return changed


async def committer(dsn: str, service_id: uuid.UUID, until: float, counts: list[int], i: int) -> None:
    conn = await asyncpg.connect(dsn)
    try:
        stmt = await conn.prepare("UPDATE services SET max_connections = $2 WHERE service_id = $1")
        n = 0
        while time.perf_counter() < until:
            async with conn.transaction():
                await stmt.fetch(service_id, 1 + n % 50)
            n += 1
        counts[i] = n
    finally:
        await conn.close()


async def phase(dsn: str, services: list[uuid.UUID], seconds: float) -> float:
    counts = [0] * len(services)
    until = time.perf_counter() + seconds
    started = time.perf_counter()
    await asyncio.gather(*(committer(dsn, s, until, counts, i) for i, s in enumerate(services)))
    return sum(counts) / (time.perf_counter() - started)


async def main(url: str, connections: int, seconds: float, rounds: int) -> None:
    sa_url = resolved(url)
    await upgrade(sa_url)
    dsn = make_url(sa_url).set(drivername="postgresql").render_as_string(hide_password=False)
    tag = uuid.uuid4().hex[:8]
    await generate(sa_url, connections, connections, tag=tag, term_days=3650)
    admin = await asyncpg.connect(dsn)
    db = Database(sa_url)
    heard = [0]
    listen = await asyncpg.connect(dsn)
    await listen.add_listener(CHANNEL, lambda *_a: heard.__setitem__(0, heard[0] + 1))
    try:
        rows = await admin.fetch("SELECT service_id FROM services WHERE login LIKE $1", f"s{tag}%")
        services = [r["service_id"] for r in rows][:connections]
        settings = {k: await admin.fetchval(f"SHOW {k}") for k in ("fsync", "synchronous_commit")}
        print(
            f"{connections} connections x {seconds:g} s per variant, {rounds} rounds; {settings}", flush=True
        )
        print(
            "| round | old: NOTIFY in the commit | new: no NOTIFY, notifier running | notifications heard |"
        )
        print("|---|---|---|---|")
        for r in range(1, rounds + 1):
            figures: dict[bool, tuple[float, int]] = {}
            for notify in (True, False) if r % 2 else (False, True):  # alternate which variant goes first
                await set_functions(admin, notify=notify)
                heard[0] = 0
                if notify:
                    rate = await phase(dsn, services, seconds)
                else:
                    async with notifier_task(db):
                        rate = await phase(dsn, services, seconds)
                figures[notify] = (rate, heard[0])
            (old, heard_old), (new, heard_new) = figures[True], figures[False]
            print(f"| {r} | {old:,.0f} commits/s | {new:,.0f} commits/s | {heard_old:,} / {heard_new:,} |")
    finally:
        await set_functions(admin, notify=False)
        await listen.close()
        await admin.close()
        await db.dispose()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("url")
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    asyncio.run(main(args.url, args.connections, args.seconds, args.rounds))
