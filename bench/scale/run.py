"""Gateway control plane at provider size (issue 14 point 4): prints each figure beside its target.

    .venv/bin/python -m bench.scale.run --url postgresql://postgres@127.0.0.1:55432/pp_c_bench \
        [--sizes 1000,50000,250000] [--ips-per-service 4] [--nodes 4] [--changes 100] [--keep]

Steps: empties the database (unless --keep: then sizes are added on top of what is there), grows it to
each size with bench/scale/generate.py and measures an idle poll there (time and SQL statements, counted
with a SQLAlchemy event listener; beside it the count(*)/max(id) fingerprint the nodes polled before the
change log); at the last size starts ``--nodes`` real gateway nodes in subprocesses (bench/scale/node.py:
cold start time, RSS and peak RSS from /proc, open descriptors from /proc/<pid>/fd), then changes a
service's whitelist ``--changes`` times through the domain code in a unit of work and records when each
node's table shows it (propagation p50 / p99 over nodes x changes).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import event, select, text

from proxyplane.core.security import SecretBox
from proxyplane.domains.proxy.service import whitelist_add, whitelist_remove
from proxyplane.gateway.store import StoreSync
from proxyplane.storage.engine import Database
from proxyplane.storage.migrate import upgrade
from proxyplane.storage.models import Service

from .generate import SECRET, generate, reset, resolved

ROOT = Path(__file__).resolve().parents[2]  # the repository: `python -m bench.scale.node` runs there
OLD_FINGERPRINT = (
    "SELECT count(*), max(id) FROM service_ips WHERE released_at IS NULL",
    "SELECT count(*), max(id) FROM service_whitelist",
    "SELECT count(*), max(id) FROM stock_ips WHERE retired_at IS NULL",
    "SELECT count(*), max(activated_at), max(canceled_at) FROM service_addons",
)


@dataclass
class PollCost:
    services: int
    ips: int
    poll_ms: float
    statements: float
    old_ms: float
    load_s: float


@dataclass
class NodeFigures:
    cpu_s: float
    ready_s: float
    rss_mib: float
    hwm_mib: float
    fds: int
    services: int


@dataclass
class Results:
    polls: list[PollCost] = field(default_factory=list)
    nodes: list[NodeFigures] = field(default_factory=list)
    propagation_ms: list[float] = field(default_factory=list)

    def percentile(self, q: float) -> float:
        data = sorted(self.propagation_ms)
        return data[min(len(data) - 1, int(q * len(data)))] if data else float("nan")


async def poll_cost(url: str, polls: int = 100) -> PollCost:
    """Cold load in-process, then ``polls`` idle polls: mean time and statements per poll."""
    db = Database(url)
    box = SecretBox(SECRET)
    sync = StoreSync(db, box, listen=False)
    count = [0]

    def seen(*_args: Any) -> None:
        count[0] += 1

    try:
        started = time.perf_counter()
        await sync.full_reload()
        load_s = time.perf_counter() - started
        await sync.poll()
        event.listen(db.engine.sync_engine, "before_cursor_execute", seen)
        started = time.perf_counter()
        for _ in range(polls):
            await sync.poll()
        poll_ms = (time.perf_counter() - started) * 1000 / polls
        event.remove(db.engine.sync_engine, "before_cursor_execute", seen)
        started = time.perf_counter()
        async with db.unit_of_work(write=False) as uow:
            for _ in range(10):
                for sql in OLD_FINGERPRINT:
                    await uow.session.execute(text(sql))
            ips = (await uow.session.execute(text(OLD_FINGERPRINT[0]))).one()[0]
        old_ms = (time.perf_counter() - started) * 1000 / 10
        return PollCost(len(sync.table), ips, poll_ms, count[0] / polls, old_ms, load_s)
    finally:
        await sync.close()
        await db.dispose()


def fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


async def start_nodes(url: str, count: int, watch: str) -> list[tuple[asyncio.subprocess.Process, dict]]:
    """The first node alone (its cold start is the figure), then the others together."""

    async def spawn() -> asyncio.subprocess.Process:
        return await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bench.scale.node", "--url", url, "--watch", watch,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, cwd=ROOT,
        )  # fmt: skip

    async def ready(proc: asyncio.subprocess.Process) -> tuple[asyncio.subprocess.Process, dict]:
        assert proc.stdout is not None
        line = await asyncio.wait_for(proc.stdout.readline(), 900)
        if not line:
            raise RuntimeError("a node exited before it was ready")
        return proc, json.loads(line)

    first = await ready(await spawn())
    rest = [await spawn() for _ in range(count - 1)]
    return [first, *[await ready(proc) for proc in rest]]


async def watched_service(db: Database) -> Service:
    async with db.unit_of_work(write=False) as uow:
        return (
            await uow.session.execute(
                select(Service)
                .where(Service.status == "active", Service.product_kind != "proxy_rotating")
                .order_by(Service.number.desc())
                .limit(1)
            )
        ).scalar_one()


async def propagate(db: Database, sid: uuid.UUID, procs: list[Any], changes: int) -> list[float]:
    """``changes`` whitelist changes through the domain; ms until each node's table shows each."""

    async def next_report(proc: Any) -> dict:
        return json.loads(await asyncio.wait_for(proc.stdout.readline(), 10))

    for proc in procs:  # the initial report of each node
        await next_report(proc)
    latencies: list[float] = []
    current: str | None = None
    for i in range(changes):
        new = f"127.9.{i >> 8 & 0xFF}.{i & 0xFF}"
        async with db.unit_of_work() as uow:
            svc = (await uow.session.execute(select(Service).where(Service.service_id == sid))).scalar_one()
            if current is not None:
                await whitelist_remove(uow.session, svc, current)
            await whitelist_add(uow.session, svc, new)
            started = time.time()
            await uow.commit()
        current = new
        for proc in procs:
            while True:
                report = await next_report(proc)
                if report["whitelist"] is not None and new in report["whitelist"]:
                    latencies.append((report["t"] - started) * 1000)
                    break
        await asyncio.sleep(0.05)
    return latencies


async def run(
    url: str,
    sizes: list[int],
    ips_per_service: int,
    nodes: int,
    changes: int,
    keep: bool,
    term_days: int = 30,
) -> Results:
    url = resolved(url)
    if not keep:
        await reset(url)
        await upgrade(url)
    results = Results()
    have = 0
    for size in sizes:
        await generate(url, size - have, (size - have) * ips_per_service, term_days=term_days)
        have = size
        results.polls.append(await poll_cost(url))
    db = Database(url)
    try:
        svc = await watched_service(db)
        started = await start_nodes(url, nodes, str(svc.service_id))
        for proc, ready in started:
            results.nodes.append(
                NodeFigures(
                    ready["cpu"],
                    ready["ready"],
                    ready["rss_kib"] / 1024,
                    ready["hwm_kib"] / 1024,
                    fds(proc.pid),
                    ready["services"],
                )
            )
        procs = [proc for proc, _ in started]
        try:
            results.propagation_ms = await propagate(db, svc.service_id, procs, changes)
        finally:
            for proc in procs:
                assert proc.stdin is not None
                proc.stdin.close()
            for proc in procs:
                await asyncio.wait_for(proc.wait(), 60)
    finally:
        await db.dispose()
    return results


def report(r: Results, nodes: int) -> str:
    lines = ["poll cost (idle poll of one node; old = the count(*)/max(id) fingerprint polled before):"]
    lines.append(f"  {'services':>9} {'exit IPs':>9} {'poll ms':>8} {'stmts':>6} {'old ms':>8} {'load s':>7}")
    for p in r.polls:
        lines.append(
            f"  {p.services:>9} {p.ips:>9} {p.poll_ms:>8.2f} {p.statements:>6.1f} {p.old_ms:>8.1f}"
            f" {p.load_s:>7.2f}"
        )
    lines.append("  target: the same poll cost at every size")
    if r.nodes:
        n = r.nodes[0]
        lines.append("node cold start (a real GatewayNode subprocess, started alone, listeners included):")
        lines.append(
            f"  {n.services} services: ready in {n.ready_s:.2f} s (target < 10 s; node CPU {n.cpu_s:.2f} s),"
            f" RSS {n.rss_mib:.0f} MiB, peak {n.hwm_mib:.0f} MiB (target < 1024 MiB)"
        )
        lines.append(f"  descriptors per node: {', '.join(str(x.fds) for x in r.nodes)}")
        others = ", ".join(f"{x.ready_s:.1f}" for x in r.nodes[1:])
        lines.append(f"  the other {nodes - 1} nodes, started together: ready in {others} s")
    if r.propagation_ms:
        lines.append(
            f"propagation of a whitelist change to {nodes} nodes ({len(r.propagation_ms)} samples):"
            f" p50 {r.percentile(0.5):.0f} ms, p99 {r.percentile(0.99):.0f} ms,"
            f" max {max(r.propagation_ms):.0f} ms (target p99 < 1000 ms)"
        )
        lines.append(f"  mean {statistics.mean(r.propagation_ms):.0f} ms")
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--url", required=True, help="bench database: it is emptied unless --keep")
    p.add_argument("--sizes", default="1000,50000,250000")
    p.add_argument("--ips-per-service", type=int, default=4)
    p.add_argument("--nodes", type=int, default=4)
    p.add_argument("--changes", type=int, default=100)
    p.add_argument("--keep", action="store_true", help="keep what is there; sizes are added on top")
    a = p.parse_args()
    sizes = [int(s) for s in a.sizes.split(",")]
    results = asyncio.run(run(a.url, sizes, a.ips_per_service, a.nodes, a.changes, a.keep))
    print(report(results, a.nodes))


if __name__ == "__main__":
    main()
