"""Every bench under bench/ at a small size, as CI runs each bench: the script runs to its end on the suite's
engine (PostgreSQL: a database of its own) and prints its figures. Figures are printed, never asserted; what
is asserted is what makes a figure mean something (a revoked token is refused, the old variant of an A/B
really does what it stands for). The benches that need no database run once, on the SQLite pass.

Not here: bench/platform.py and platform_data.py (tests/bench/test_platform*.py), bench/scale
(test_scale.py), bench/contract.py (tests/adapters/rest/test_contract.py); bench/gateway_bench.sh,
connsetup.py, conn_profile.py, tunnel_bulk.py, rotating_http.py, ipv6_exit.py and ipv6_peers.py drive the
shared harness (../shared/bench/proxy: its C load client, its peer proxies) and network namespaces, which a
clone of this repository alone does not have: run by hand (bench/README.md)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.bench.databases import own_database

pytestmark = pytest.mark.anyio
ROOT = Path(__file__).resolve().parents[2]

# bench -> (its arguments, "{url}" the database's; what its output must show)
WITH_DATABASE = {
    "http_cpu": (["{url}", "20"], r"order POST: REST [\d.]+ ms, invoke\(\) direct [\d.]+ ms"),
    "order_cpu": (["{url}", "20"], r"order: CPU [\d.]+ ms, wall [\d.]+ ms per request \(n=20\)"),
    "quote_balance": (
        ["{url}", "--stock", "200", "--ledger", "50", "--repeat", "5"],
        r"ledger\s+50 entries: balance p50",
    ),
    "subuser_metering": (["{url}", "10"], r"\n\s+10\s+crossing\s+\d+\s+[\d.]+"),
    "subuser_usage_reads": (["{url}", "2", "1"], r"totals:\s+rollups\s+[\d.]+ ms"),
    # PostgreSQL by --pg; without it, a SQLite file of its own
    "oauth_token_check": (["{--pg}", "--checks", "50", "--grants", "10"], r"revocation: True"),
    "activity_row": (["{--pg}", "--calls", "20", "--blocks", "2"], r"rows written 20 for 20 noted calls"),
    "usage_chart": (["--db", "{url}", "--repeat", "1"], r"\| chart 7d now, series per hour \| [\d.]+ ms p50"),
}
WITHOUT_DATABASE = {
    "subuser_hotpath": (["--services", "200", "--number", "1000", "--repeat", "1"], r"meter record\s+\d+ ns"),
    "tunnel_rss": (["--tunnels", "50"], r"socks5\s+50 idle tunnels: gateway RSS \d+ -> \d+ KiB"),
}


def run_bench(name: str, args: list[str]) -> str:
    """`python -m bench.<name> args` from the repository root, without the suite's PROXYPLANE_* settings;
    its output (the run must end with status 0)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROXYPLANE_")}
    command = [sys.executable, "-m", f"bench.{name}", *args]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{command}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def expand(args: list[str], url: str) -> list[str]:
    pg = url.startswith("postgresql")
    out: list[str] = []
    for a in args:
        out += (["--pg", url] if pg else []) if a == "{--pg}" else [a.format(url=url)]
    return out


@pytest.mark.parametrize("name", sorted(WITH_DATABASE))
async def test_bench_runs_small_on_the_suite_engine(name: str, database_url: str, tmp_path: Path) -> None:
    args, shows = WITH_DATABASE[name]
    if database_url.startswith("postgresql"):
        async with own_database(database_url) as url:
            out = run_bench(name, expand(args, url))
    else:
        out = run_bench(name, expand(args, f"sqlite+aiosqlite:///{tmp_path / 'bench.db'}"))
    assert re.search(shows, out), out


@pytest.mark.parametrize("name", sorted(WITHOUT_DATABASE))
def test_bench_without_database_runs_small(name: str, database_url: str) -> None:
    if database_url.startswith("postgresql"):
        pytest.skip("needs no database: runs once, on the SQLite pass")
    args, shows = WITHOUT_DATABASE[name]
    out = run_bench(name, args)
    assert re.search(shows, out), out


async def test_notify_commits_old_variant_really_notifies(database_url: str) -> None:
    """bench/notify_commits.py's A/B: the old trigger functions send a NOTIFY in every commit (heard by the
    listening node), the new ones none (the change notifier's ticks only)."""
    if not database_url.startswith("postgresql"):
        pytest.skip("NOTIFY is PostgreSQL's")
    async with own_database(database_url) as url:
        out = run_bench("notify_commits", [url, "--connections", "2", "--seconds", "0.3", "--rounds", "1"])
    row = re.search(r"\| 1 \| [\d,]+ commits/s \| [\d,]+ commits/s \| ([\d,]+) / ([\d,]+) \|", out)
    assert row, out
    heard_old, heard_new = (int(x.replace(",", "")) for x in row.groups())
    assert heard_old >= 20 and heard_new < heard_old, out
