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

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def parse(text: str) -> Samples:
    out: Samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return out


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def delta(after: Samples, before: Samples, name: str, **labels: str) -> float:
    return value(after, name, **labels) - value(before, name, **labels)


async def raw_get(port: int, path: str) -> tuple[int, str]:
    """GET over a raw socket (the metrics port speaks plain HTTP/1.1, Connection: close)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    data = await asyncio.wait_for(reader.read(), 5)
    writer.close()
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split(b" ")[1]), body.decode()


async def scrape(port: int) -> Samples:
    status, body = await raw_get(port, "/metrics")
    assert status == 200
    return parse(body)


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
