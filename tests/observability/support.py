"""Helpers of the observability tests: scrape a metrics endpoint into numbers, a static service to proxy
through (bought through the REST API, as a customer would)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import httpx
from prometheus_client.parser import text_string_to_metric_families

from proxyplane.platform import Platform
from tests.domains.stock.support import fresh_stock
from tests.gateway.test_store_static import API, buy
from tests.support import Account, bearer

SCRAPE_WAIT = 60.0  # seconds, a bound on one scrape (not a delay: it ends when the answer is read)
# the waits that scrape until a counter moved (bounded; each try is one scrape, seconds under load)
SCRAPED_WITHIN = 60.0
Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def parse(text: str, only: tuple[str, ...] = ()) -> Samples:
    """The samples of a scrape; with ``only``, of the metrics whose names start so (the text parser is pure
    Python: this process's registry holds every test's series before, a scrape of it costs seconds)."""
    if only:
        text = "\n".join(line for line in text.split("\n") if _named(line).startswith(only)) + "\n"
    out: Samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return out


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def delta(after: Samples, before: Samples, name: str, **labels: str) -> float:
    return value(after, name, **labels) - value(before, name, **labels)


def _named(line: str) -> str:
    """The metric name of an exposition line ("# HELP name ...", "# TYPE name ...", "name{...} value")."""
    if line.startswith("#"):
        parts = line.split(" ", 3)
        return parts[2] if len(parts) > 2 else ""
    return line


async def raw_get(port: int, path: str) -> tuple[int, str]:
    """GET over a raw socket (the metrics port speaks plain HTTP/1.1, Connection: close). The answer is
    awaited up to SCRAPE_WAIT: /metrics renders this test process's whole registry (every series the
    suite made so far) in the node's loop, seconds on a loaded 2-core box."""
    reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), SCRAPE_WAIT)
    writer.write(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    data = await asyncio.wait_for(reader.read(), SCRAPE_WAIT)
    writer.close()
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split(b" ")[1]), body.decode()


async def scrape(port: int, only: tuple[str, ...] = ()) -> Samples:
    status, body = await raw_get(port, "/metrics")
    assert status == 200
    return parse(body, only)


@dataclass
class Static:
    service_id: str
    exit_ip: str
    login: str
    password: str
    key: str


async def static_service(client: httpx.AsyncClient, platform: Platform, account: Account) -> Static:
    exits = await fresh_stock(platform, "proxy_personal", "US", 1)
    svc = await buy(client, platform, account, "Dedicated IP", parameters={}, whitelist_ips=["127.0.0.250"])
    key, sid = svc["key"], svc["service_id"]
    auth = (await client.get(f"{API}/{sid}/proxy/auth?reveal=true", headers=bearer(key))).json()
    return Static(sid, exits[0], auth["login"], auth["password"], key)
