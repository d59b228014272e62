"""The gateway's per-request Python work for a service WITHOUT sub-users (issue 18.2 must not slow it):
authenticate (login/password, login with username options, whitelisted client IP), a connection slot
taken and released, and a metered request, over an access table of rotating and static services.

    .venv/bin/python -m bench.subuser_hotpath                    # this tree (as a module: bench/platform.py)
    PYTHONPATH=/path/to/older/src .venv/bin/python -m bench.subuser_hotpath   # another tree, to compare

Prints ns per operation (best of --repeat timings of --number calls). CPU-bound, one process; on a
shared machine compare medians of alternating runs.
"""

from __future__ import annotations

import argparse
import timeit

from proxyplane.gateway.access import AccessTable, ServiceEntry, authenticate
from proxyplane.gateway.admission import release_slot, take_slot
from proxyplane.gateway.context import Context, Settings
from proxyplane.gateway.limits import ConnectionLimiter
from proxyplane.gateway.metering import Meter
from proxyplane.gateway.routing import Router


def table(n: int) -> AccessTable:
    pool = {f"127.1.{i // 250}.{i % 250 + 1}": "us" for i in range(1000)}
    entries = []
    for i in range(n):
        sid = f"{i:08d}-0000-0000-0000-000000000000"
        if i % 2:
            entries.append(
                ServiceEntry(
                    sid,
                    "rotating",
                    f"user{i}",
                    "pw",
                    pool,
                    frozenset({f"127.2.{i // 250 % 250}.{i % 250 + 1}"}),
                    max_connections=100,
                )
            )
        else:
            entries.append(
                ServiceEntry(
                    sid,
                    "static",
                    f"user{i}",
                    "pw",
                    {f"127.3.{i // 250 % 250}.{i % 250 + 1}": "de"},
                    max_connections=100,
                )
            )
    return AccessTable(entries)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--services", type=int, default=20_000)
    parser.add_argument("--number", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    access = table(args.services)
    ctx = Context(access, Router(), ConnectionLimiter(), Meter(), Settings())
    i = 7  # a rotating service
    sid = f"{i:08d}-0000-0000-0000-000000000000"
    entry = access.get(sid)
    assert entry is not None
    wl = next(iter(entry.whitelist))
    cases = {
        "auth login/password": lambda: authenticate(access, None, "", f"user{i}", "pw"),
        "auth login-country-us": lambda: authenticate(access, None, "", f"user{i}-country-us", "pw"),
        "auth whitelisted IP": lambda: authenticate(access, None, wl, None, None),
        "auth static listen IP": lambda: authenticate(access, "127.3.0.9", "", "user8", "pw"),
        "slot take+release": lambda: (take_slot(ctx, entry), release_slot(ctx, sid)),
        "meter record": lambda: ctx.meter.record(
            sid, "example.com", requests=1, bytes_up=100, bytes_down=1000
        ),
    }
    for name, fn in cases.items():
        fn()
        best = min(timeit.repeat(fn, number=args.number, repeat=args.repeat))
        print(f"{name:24s} {best / args.number * 1e9:8.0f} ns")


if __name__ == "__main__":
    main()
