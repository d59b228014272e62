"""Issue 19.4 (30.6: with its coverage phase): schemathesis, every check, its stateful phase, against the
real app over HTTP finds nothing.

A small run (a few examples per operation, seconds); the full-size run is `python -m bench.contract`
(bench/README.md). The server runs in a thread of this process on the test database."""

from __future__ import annotations

from bench.contract import run_contract

from proxyplane.core.settings import Settings


def test_schemathesis_finds_no_failure(settings: Settings) -> None:
    assert run_contract(settings, examples=2, phases="examples,coverage,fuzzing,stateful") == 0
