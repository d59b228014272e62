"""CPU of the HTTP/ASGI/FastAPI layer per REST request (issue 15, engineer K): the real app called as an
ASGI callable with raw messages (what uvicorn hands it, without uvicorn's own parsing and no HTTP client
in the process), against `invoke()` called directly with the same input, in alternating blocks. The
difference is what a request spends outside invoke(): the middleware chain, routing, body read and
validation, the key check, the response JSON, the access log and the metrics.

    .venv/bin/python bench/http_cpu.py sqlite:////tmp/pp_http_cpu.db 300
    .venv/bin/python bench/http_cpu.py postgresql://postgres@127.0.0.1:55432/pp_k_bench 300
    .venv/bin/python bench/http_cpu.py <url> 300 --profile /tmp/http.prof  # + cProfile of the REST blocks
    .venv/bin/python bench/http_cpu.py <url> 2000 --layer  # the HTTP layer alone (see below)
    .venv/bin/python bench/http_cpu.py <url> 2000 --layer --ab  # + each shortcut off in turn

`--layer` answers every request from the operation's first real result (the route's `invoke` replaced by
a canned answer): no database at all, so the figure is the HTTP layer's own CPU with little noise.

Prints, per request kind (balance GET, order POST), the process CPU per request of each way and the
difference. The database is emptied first (PostgreSQL: its public schema is DROPPED; SQLite: the file is
removed). A shared machine: compare figures of runs made one after the other, CPU not wall time."""

from __future__ import annotations

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]
sys.path.insert(0, os.path.dirname(_HERE))

import asyncio  # noqa: E402
import cProfile  # noqa: E402
import json  # noqa: E402
import logging  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections.abc import Awaitable, Callable  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

from bench.fresh_db import fresh_database, one_buyer, order_body  # noqa: E402
from bench.order_cpu import _order_in  # noqa: E402
from proxyplane.core.settings import Settings  # noqa: E402

CLIENT = ("127.0.0.9", 50000)


async def asgi_call(app: Any, method: str, path: str, key: str, body: bytes = b"") -> tuple[int, bytes]:
    """One request through the ASGI app, headers as a typical client sends them."""
    headers = [
        (b"host", b"127.0.0.1:8000"),
        (b"user-agent", b"bench/1"),
        (b"accept", b"*/*"),
        (b"authorization", b"Bearer " + key.encode()),
    ]
    if body:
        headers += [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    scope = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "server": ("127.0.0.1", 8000),
        "client": CLIENT,
        "scheme": "http",
        "method": method,
        "root_path": "",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "headers": headers,
        "state": {},
    }
    sent = False
    status = 0
    chunks: list[bytes] = []

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        await asyncio.Event().wait()  # a disconnect never comes while the app runs
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))

    await app(scope, receive, send)
    return status, b"".join(chunks)


async def _nothing() -> None:
    return None


async def _ab(app: Any, pairs: list[Any], rounds: int, block: int) -> None:
    """`--ab`: CPU per request with every shortcut, with one off, with all off (the walk and FastAPI's
    handler: the layer as it was), in alternated blocks."""
    from proxyplane.adapters.rest.fast import FastOperation
    from proxyplane.adapters.rest.route_table import RouteTable

    table = app.router.middleware_stack
    fast = [r for r in app.router.routes if isinstance(getattr(r, "app", None), FastOperation)]

    def setting(use_table: bool, use_fast: bool) -> None:
        app.router.middleware_stack = table if use_table else table.walk
        for r in fast:
            r.app.enabled = use_fast and r.app.usable

    assert isinstance(table, RouteTable)
    variants = {
        "all shortcuts": (True, True),
        "no route table": (False, True),
        "no fast operation path": (True, False),
        "none (as before)": (False, False),
    }
    for name, rest, _ in pairs:
        cpu = dict.fromkeys(variants, 0.0)
        for _ in range(rounds):
            for variant, flags in variants.items():
                setting(*flags)
                for _ in range(10):
                    await rest()
                start = time.process_time()
                for _ in range(block):
                    await rest()
                cpu[variant] += time.process_time() - start
        setting(True, True)
        shown = ", ".join(f"{v} {c / (block * rounds) * 1000:.3f}" for v, c in cpu.items())
        print(f"{name}: ms CPU per request: {shown} (n={block * rounds} each)")


async def run(url: str, n: int, profile: str | None, layer: bool = False, ab: bool = False) -> None:

    from proxyplane.app import create_app
    from proxyplane.domains.apikeys.service import authenticate
    from proxyplane.observability.logs import configure
    from proxyplane.ops import REGISTRY, Caller, invoke
    from proxyplane.platform import Platform
    from proxyplane.storage.engine import Database

    url = Settings(database_url=url).resolved_database_url()
    await fresh_database(url)
    configure("json", "INFO", open(os.devnull, "w"))  # the access log as serve writes it (to nowhere)
    with tempfile.TemporaryDirectory(prefix="pp-http-cpu-") as home:
        settings = Settings(
            home=Path(home), database_url=url, secret_key="bench", public_base_url="http://testserver"
        )
        platform = Platform(settings, Database(url))
        _, key = await one_buyer(platform.db, 50, 900_000_000, "http")
        app = create_app(platform)
        principal = await authenticate(platform.db, key, CLIENT[0])
        assert principal is not None
        caller = Caller(principal.customer_id, principal.key_id, principal.scopes, CLIENT[0])

        async def rest_balance() -> None:
            status, _ = await asgi_call(app, "GET", "/api/v1/customer/wallet/balance", key)
            assert status == 200, status

        async def rest_order() -> None:
            body = json.dumps(order_body()).encode()
            status, text = await asgi_call(app, "POST", "/api/v1/billing/composite/order", key, body)
            assert status == 201, text

        async def direct_balance() -> None:
            await invoke(platform, REGISTRY["get_balance"], caller, None)

        async def direct_order() -> None:
            await invoke(platform, REGISTRY["order_composite"], caller, _order_in())

        from proxyplane.adapters.rest import routes

        real_invoke = routes.invoke
        canned: dict[str, Any] = {}

        async def canned_invoke(platform: Any, op: Any, caller: Any, data: Any) -> Any:
            """The operation's last real answer, again: what is left is the HTTP layer alone."""
            if op.name not in canned:
                canned[op.name] = await real_invoke(platform, op, caller, data)
            return canned[op.name]

        async def layer_only(call: Callable[[], Awaitable[None]]) -> None:
            routes.invoke = canned_invoke  # type: ignore[assignment]
            try:
                await call()
            finally:
                routes.invoke = real_invoke

        prof = cProfile.Profile() if profile else None
        rounds = 4
        block = max(n // rounds, 1)
        pairs: list[tuple[str, Callable[[], Awaitable[None]], Callable[[], Awaitable[None]]]] = [
            ("balance GET", rest_balance, direct_balance),
            ("order POST", rest_order, direct_order),
        ]
        if layer:  # the operation answers from a canned result: no database, the HTTP layer alone
            pairs = [
                ("balance GET (HTTP layer alone)", lambda: layer_only(rest_balance), _nothing),
                ("order POST (HTTP layer alone)", lambda: layer_only(rest_order), _nothing),
            ]
        if ab:  # each shortcut of the HTTP layer off in turn, the same requests alternated
            await _ab(app, pairs, rounds, block)
            await platform.close()
            return
        for name, rest, direct in pairs:
            for call in (rest, direct):
                for _ in range(20):  # warm-up: statement caches, pool, key cache
                    await call()
            cpu = {"rest": 0.0, "direct": 0.0}
            for _ in range(rounds):  # alternated blocks: the machine's load hits both alike
                for way, call in (("rest", rest), ("direct", direct)):
                    if prof is not None and way == "rest":
                        prof.enable()
                    start = time.process_time()
                    for _ in range(block):
                        await call()
                    cpu[way] += time.process_time() - start
                    if prof is not None and way == "rest":
                        prof.disable()
            per = {way: seconds / (block * rounds) * 1000 for way, seconds in cpu.items()}
            print(
                f"{name}: REST {per['rest']:.3f} ms, invoke() direct {per['direct']:.3f} ms, "
                f"outside invoke {per['rest'] - per['direct']:.3f} ms CPU per request (n={block * rounds})"
            )
        if prof is not None and profile:
            prof.dump_stats(profile)
        await platform.close()
    logging.getLogger().handlers.clear()
    print("load average (1/5/15 min): " + " / ".join(f"{x:.1f}" for x in os.getloadavg()))


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a not in ("--profile", "--layer", "--ab")]
    prof_path = None
    if "--profile" in sys.argv:
        prof_path = sys.argv[sys.argv.index("--profile") + 1]
        args.remove(prof_path)
    asyncio.run(
        run(
            args[0],
            int(args[1]) if len(args) > 1 else 300,
            prof_path,
            "--layer" in sys.argv,
            "--ab" in sys.argv,
        )
    )
