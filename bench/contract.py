"""The OpenAPI contract run (issue 19): schemathesis, every check, against a real platform over HTTP.

Starts the REST app (adapters/rest/app.create_app) under uvicorn in a thread of this process on a free
loopback port, on the given database (migrated and seeded with the demo stock), makes a customer with a
key holding every scope and a funded wallet, then runs `schemathesis run --checks all` against
`/api/v1/openapi.json` with that key. Exit code = schemathesis's (0: no failure).

    .venv/bin/python -m bench.contract --examples 15                      # SQLite in a temp dir
    .venv/bin/python -m bench.contract --examples 50 \\
        --database-url postgresql://postgres@127.0.0.1:55432/pp_f_bench    # PostgreSQL (schema dropped!)
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import uvicorn

from proxyplane.core.settings import Settings
from proxyplane.platform import Platform
from proxyplane.storage.engine import Database

PHASES = "examples,coverage,fuzzing,stateful"
CONFIG = Path(__file__).with_name("schemathesis.toml")  # the business refusals allowed, with reasons


def assemble(platform: Platform) -> Any:
    """The whole app as `proxyplane serve` builds it (proxyplane/app.py; adapters/rest/app.py before)."""
    try:
        module = importlib.import_module("proxyplane.app")
    except ImportError:
        module = importlib.import_module("proxyplane.adapters.rest.app")
    return module.create_app(platform)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def serving(settings: Settings) -> Iterator[str]:
    """The REST app under uvicorn in a thread (its own event loop and Platform); yields the base URL."""
    port = free_port()
    holder: dict[str, uvicorn.Server] = {}
    failed: list[BaseException] = []

    def run() -> None:
        async def main() -> None:
            platform = Platform(settings, Database(settings.resolved_database_url()))
            try:
                app = assemble(platform)
                config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")
                server = uvicorn.Server(config)
                holder["server"] = server
                await server.serve()
            finally:
                await platform.close()

        try:
            asyncio.run(main())
        except BaseException as exc:  # reported by the caller
            failed.append(exc)

    thread = threading.Thread(target=run, name="contract-server", daemon=True)
    thread.start()
    deadline = time.monotonic() + 120  # importing and building the app takes ~20 s on a busy machine
    while not (holder.get("server") and holder["server"].started):
        if failed or time.monotonic() > deadline:
            raise RuntimeError(f"the server did not start: {failed!r}")
        time.sleep(0.05)
    base = f"http://127.0.0.1:{port}"
    # FastAPI builds the description at its first request (10+ s on a busy machine, beyond schemathesis's
    # 10 s schema read timeout): built here first, then served from the app's cache
    with urllib.request.urlopen(f"{base}/api/v1/openapi.json", timeout=120) as warm:
        warm.read()
    try:
        yield base
    finally:
        holder["server"].should_exit = True
        thread.join(30)


async def prepare(url: str, credit_cents: int = 10_000_000) -> str:
    """Seed the demo stock when empty; a customer with every scope and a funded wallet: its API key."""
    from proxyplane.core.scopes import ALL_SCOPES
    from proxyplane.domains.accounts.service import create_customer
    from proxyplane.domains.apikeys.service import create_key
    from proxyplane.domains.stock.seed import seed_demo
    from proxyplane.domains.stock.service import has_stock
    from proxyplane.domains.wallet.service import credit

    db = Database(url)
    try:
        async with db.unit_of_work(write=True) as uow:
            if not await has_stock(uow.session):
                await seed_demo(uow.session)
            email = f"contract-{os.urandom(6).hex()}@example.com"
            customer = await create_customer(uow.session, email, "correct horse battery", "Contract Run")
            await credit(uow.session, customer.id, credit_cents, "adjustment", "contract run")
            _, raw = await create_key(uow.session, customer.id, "contract", frozenset(ALL_SCOPES))
            await uow.commit()
        return raw
    finally:
        await db.dispose()


def schemathesis_command(base: str, key: str, examples: int, phases: str, extra: list[str],
                         config: Path = CONFIG) -> list[str]:
    exe = Path(sys.executable).with_name("schemathesis")
    return [
        str(exe),
        "--config-file",
        str(config),
        "run",
        f"{base}/api/v1/openapi.json",
        "--checks",
        "all",
        "--phases",
        phases,
        "--max-examples",
        str(examples),
        "--header",
        f"Authorization: Bearer {key}",
        "--seed",
        "19",
        "--workers",
        "1",
        "--suppress-health-check",
        "all",
        *extra,
    ]


def run_contract(
    settings: Settings, examples: int, phases: str = PHASES, extra: list[str] | None = None,
    stateful_steps: int = 0,
) -> int:
    """``stateful_steps`` > 0: the stateful phase's max-steps (a config-file-only option of schemathesis),
    through a copy of the config with that one setting added."""
    from proxyplane.storage.migrate import upgrade

    url = settings.resolved_database_url()
    asyncio.run(upgrade(url))
    key = asyncio.run(prepare(url))
    with serving(settings) as base, tempfile.TemporaryDirectory() as cwd:  # schemathesis caches in its cwd
        config = CONFIG
        if stateful_steps > 0:
            config = Path(cwd) / "schemathesis.toml"
            steps = f"\n[phases.stateful]\nmax-steps = {stateful_steps}\n"
            config.write_text(CONFIG.read_text() + steps)
        cmd = schemathesis_command(base, key, examples, phases, extra or [], config)
        return subprocess.call(cmd, env={**os.environ, "NO_COLOR": "1"}, cwd=cwd)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--examples", type=int, default=15, help="schemathesis --max-examples per operation")
    ap.add_argument("--phases", default=PHASES)
    ap.add_argument("--database-url", default="", help="default: a fresh SQLite file in a temp dir")
    ap.add_argument("--stateful-steps", type=int, default=0,
                    help="the stateful phase's max-steps (default: schemathesis's own)")
    ap.add_argument("extra", nargs="*", help="more schemathesis options (after --)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as home:
        url = args.database_url or f"sqlite+aiosqlite:///{home}/contract.db"
        settings = Settings(
            home=Path(home),
            database_url=url,
            secret_key="contract-secret-key",
            public_base_url="http://127.0.0.1",
        )
        sys.exit(run_contract(settings, args.examples, args.phases, args.extra, args.stateful_steps))


if __name__ == "__main__":
    main()
