"""The one writer of the gateway nodes' own rows: `gateway_node_addresses` (each node's local address
prefixes and heartbeat: gateway/local_ips.py) and `gateway_node_connections` (each node's open
connections per service: gateway/node_limits.py). One upsert of the node's row, the node's row removed
when it stops, rows older than a cutoff pruned; the reads of the other nodes' fresh rows."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.storage.engine_choice import dialect_name
from proxyplane.storage.models.gateway_health import GatewayNodeConnections
from proxyplane.storage.models.gateway_nodes import GatewayNodeAddresses


def upsert_for(session: AsyncSession) -> Any:
    """The engine's INSERT with ON CONFLICT (SQLite's or PostgreSQL's)."""
    return sqlite_insert if dialect_name(session) == "sqlite" else pg_insert


async def publish_addresses(
    session: AsyncSession, node_id: str, prefixes: list[str], nonlocal_ips: int, now: datetime
) -> None:
    """Write the node's row of gateway_node_addresses (its prefixes, the count outside them, heartbeat)."""
    stmt = upsert_for(session)(GatewayNodeAddresses).values(
        node_id=node_id, prefixes=prefixes, nonlocal_ips=nonlocal_ips, updated_at=now
    )
    stmt = stmt.on_conflict_do_update(
        index_elements=["node_id"],
        set_={
            "prefixes": stmt.excluded.prefixes,
            "nonlocal_ips": stmt.excluded.nonlocal_ips,
            "updated_at": now,
        },
    )
    await session.execute(stmt)


async def prune_addresses(session: AsyncSession, before: datetime) -> None:
    await session.execute(delete(GatewayNodeAddresses).where(GatewayNodeAddresses.updated_at < before))


async def remove_addresses(session: AsyncSession, node_id: str) -> None:
    await session.execute(delete(GatewayNodeAddresses).where(GatewayNodeAddresses.node_id == node_id))


async def live_prefixes(session: AsyncSession, fresh: datetime) -> list[list[str]]:
    """The prefix lists of the nodes whose heartbeat is later than ``fresh``."""
    rows = (
        await session.execute(
            select(GatewayNodeAddresses.prefixes).where(GatewayNodeAddresses.updated_at > fresh)
        )
    ).all()
    return [list(texts or ()) for (texts,) in rows]


async def publish_connections(
    session: AsyncSession, node_id: str, counts: dict[str, int], now: datetime
) -> None:
    """Write the node's row of gateway_node_connections (its open connections per service)."""
    stmt = upsert_for(session)(GatewayNodeConnections).values(node_id=node_id, counts=counts, updated_at=now)
    stmt = stmt.on_conflict_do_update(
        index_elements=["node_id"], set_={"counts": stmt.excluded.counts, "updated_at": now}
    )
    await session.execute(stmt)


async def prune_connections(session: AsyncSession, before: datetime) -> None:
    await session.execute(delete(GatewayNodeConnections).where(GatewayNodeConnections.updated_at < before))


async def remove_connections(session: AsyncSession, node_id: str) -> None:
    await session.execute(delete(GatewayNodeConnections).where(GatewayNodeConnections.node_id == node_id))


async def other_connections(session: AsyncSession, node_id: str, fresh: datetime) -> list[dict[str, Any]]:
    """The counts of the other nodes' rows refreshed after ``fresh``."""
    rows = await session.execute(
        select(GatewayNodeConnections.counts).where(
            GatewayNodeConnections.node_id != node_id,
            GatewayNodeConnections.updated_at > fresh,
        )
    )
    return [node_counts or {} for (node_counts,) in rows.all()]
