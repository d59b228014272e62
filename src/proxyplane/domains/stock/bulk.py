"""Bulk stock import: ranges and files of exit IPs, set-based, tens of thousands of IPs per second.

The rows of an import go in chunks of CHUNK to a temporary staging table (storage/repos/stock_import.py:
PostgreSQL: COPY through asyncpg's `copy_records_to_table`; SQLite: one `executemany`), and each chunk is
applied with two set-based statements: reactivate the retired IPs of the chunk that no service holds any
more, then `INSERT ... SELECT ... ON CONFLICT (address) DO NOTHING` the rest. Duplicates are found by the
unique index on `stock_ips.address` (O(chunk log stock), never a scan of the stock) and, inside one import,
by a set of the addresses seen. So the statement count of an import is bounded by its chunk count,
whatever the stock holds; everything runs in the caller's transaction (services never commit).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from itertools import repeat

from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.domains.stock.countries import normalize_country
from proxyplane.domains.stock.service import pool_capacity
from proxyplane.storage.repos import stock_import
from proxyplane.storage.repos.stock_import import Row as Row

CHUNK = 25_000
MAX_RANGE = 1 << 24  # one range (a /8) at most; a /16 per pool is the usual size

Progress = Callable[[int], None]  # called with the number of input rows handled since the last call


@dataclass(frozen=True)
class ImportResult:
    added: int  # new rows plus retired, unheld IPs reactivated in the pool
    skipped: int  # already in stock (live or held), or repeated in the input
    statements: int  # SQL statements and COPYs run (bounded by the chunk count)


@lru_cache(maxsize=512)
def country(code: str) -> str:
    return normalize_country(code)


def parse_ipv4(value: str) -> str:
    try:
        return str(ipaddress.IPv4Address(value.strip()))
    except ValueError as exc:
        raise ValueError(f"not an IPv4 address: {value!r}") from exc


def range_bounds(spec: str) -> tuple[int, int]:
    """(first, last) address as integers of `127.0.1.0/24` (the usable hosts of the network, or every
    address of a /31 or /32) or `127.0.1.10-127.0.1.20` (inclusive)."""
    spec = spec.strip()
    if "-" in spec:
        lo, hi = (int(ipaddress.IPv4Address(p.strip())) for p in spec.split("-", 1))
        if hi < lo:
            raise ValueError(f"empty range {spec!r}")
    else:
        net = ipaddress.IPv4Network(spec, strict=False)
        lo, hi = int(net.network_address), int(net.broadcast_address)
        if net.prefixlen < 31:
            lo, hi = lo + 1, hi - 1
    if hi - lo + 1 > MAX_RANGE:
        raise ValueError(f"a range may hold at most {MAX_RANGE} addresses")
    return lo, hi


def dotted(n: int) -> str:
    return f"{n >> 24}.{n >> 16 & 255}.{n >> 8 & 255}.{n & 255}"


_OCTETS = [str(i) for i in range(256)]


class RangeRows:
    """The rows of one address range (distinct by construction), built a /24 at a time from string
    prefixes and tuples made by `zip` (C speed: no per-address integer formatting or dict)."""

    def __init__(self, first: int, last: int, country_maxmind: str, country_ripe: str) -> None:
        self.first, self.last = first, last
        self.mm, self.ripe = country(country_maxmind), country(country_ripe)

    def __len__(self) -> int:
        return self.last - self.first + 1

    def __iter__(self) -> Iterator[Row]:
        for chunk in self.chunks(CHUNK):
            yield from chunk

    def addresses(self, first: int, last: int) -> list[str]:
        out: list[str] = []
        n = first
        while n <= last:
            block_end = min(last, n | 255)
            prefix = f"{n >> 24}.{n >> 16 & 255}.{n >> 8 & 255}."
            out += [prefix + octet for octet in _OCTETS[n & 255 : (block_end & 255) + 1]]
            n = block_end + 1
        return out

    def chunks(self, size: int) -> Iterator[list[Row]]:
        for start in range(self.first, self.last + 1, size):
            end = min(self.last, start + size - 1)
            addresses = self.addresses(start, end)
            yield list(zip(addresses, repeat(self.mm, len(addresses)), repeat(self.ripe, len(addresses)),
                           strict=True))


def range_rows(first: int, last: int, country_maxmind: str, country_ripe: str) -> RangeRows:
    return RangeRows(first, last, country_maxmind, country_ripe)


def file_rows(lines: Iterable[str]) -> Iterator[Row]:
    """`IP MAXMIND_COUNTRY [RIPE_COUNTRY]` per line (`,` also separates; `#` starts a comment)."""
    for n, raw in enumerate(lines, 1):
        parts = raw.split("#", 1)[0].replace(",", " ").split()
        if not parts:
            continue
        if len(parts) not in (2, 3):
            raise ValueError(f"line {n}: expected `IP COUNTRY [RIPE_COUNTRY]`")
        try:
            mm = country(parts[1])
            yield parse_ipv4(parts[0]), mm, country(parts[2]) if len(parts) == 3 else mm
        except ValueError as exc:
            raise ValueError(f"line {n}: {exc}") from None


def _chunks(rows: Iterable[Row], seen: set[str]) -> Iterator[tuple[list[Row], int]]:
    """(new distinct rows, input rows consumed) per chunk."""
    if isinstance(rows, RangeRows):  # one range: distinct already
        for part in rows.chunks(CHUNK):
            yield part, len(part)
        return
    chunk: list[Row] = []
    consumed = 0
    for row in rows:
        consumed += 1
        if row[0] in seen:
            continue
        seen.add(row[0])
        chunk.append(row)
        if len(chunk) == CHUNK:
            yield chunk, consumed
            chunk, consumed = [], 0
    if chunk or consumed:
        yield chunk, consumed


async def import_rows(
    session: AsyncSession,
    product_kind: str,
    rows: Iterable[Row],
    *,
    capacity: int | None = None,
    port: int | None = None,
    reactivate: bool = True,
    progress: Progress | None = None,
) -> ImportResult:
    """Add IPs to a pool in the session's transaction. Rows must hold normalized addresses and
    countries (`range_rows`, `file_rows`). A retired IP that no service holds is reactivated in the
    given pool (counted as added) when `reactivate`; any other address already in stock is skipped."""
    cap = pool_capacity(product_kind, capacity)
    seen: set[str] = set()
    added, skipped, statements = await stock_import.import_chunks(
        session, product_kind, cap, port, reactivate, _chunks(rows, seen), progress
    )
    return ImportResult(added=added, skipped=skipped, statements=statements)
