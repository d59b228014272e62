"""The fault suite at full size (issue 35): tests/faults/ with a 30 s store outage, figures printed.

    python -m bench.faults --pg postgresql://user@host/db [--outage 30] [--restart 10] [--run 10]

Runs the fault tests (a gateway node of two workers on PostgreSQL behind a link that is cut for the
outage, SIGTERMed during it, restarted after; the API doors on a store that refuses connections; the
store restarted under 20 buyers on two API processes, down `--restart` seconds between `--run` seconds
of orders on each side; an API process SIGKILLed mid-order; a PostgreSQL server of the test's own crashed
and started again under buyers and proxy traffic) on the given PostgreSQL database (its
public schema is dropped: give it a database of its own) and prints each scenario's figures beside its
goal. CI runs the same tests at a 4 s outage and a 2 s restart between 2 s of orders (tests/faults/).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pg", required=True, help="a PostgreSQL URL (its schema is reset)")
    parser.add_argument("--outage", type=float, default=30.0, help="seconds the store is cut")
    parser.add_argument("--restart", type=float, default=10.0, help="seconds the store is down under buyers")
    parser.add_argument("--run", type=float, default=10.0, help="seconds of orders before and after it")
    args = parser.parse_args()
    env = {
        **os.environ,
        "PROXYPLANE_TEST_DATABASE_URL": args.pg,
        "PROXYPLANE_FAULT_OUTAGE_SECONDS": str(args.outage),
        "PROXYPLANE_FAULT_RESTART_SECONDS": str(args.restart),
        "PROXYPLANE_FAULT_RUN_SECONDS": str(args.run),
    }
    tests = ["tests/faults/", "tests/observability/test_store_outage.py"]
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-s", "-p", "no:randomly", *tests],  # -q: the project's addopts
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    for line in done.stdout.splitlines():
        if re.match(r"fault figures:|FAILED ", line):
            print(line)
    summary = [
        line for line in done.stdout.splitlines() if re.search(r"\d+ (passed|failed).* in [\d.]+s", line)
    ]
    print(summary[-1] if summary else done.stdout[-2000:])
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
