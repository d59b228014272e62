"""Reading sub-users (issue 18) from the store for the access table: one set-based select per load (the
sub-users of the loaded services joined with their whitelist entries), whatever the number of services;
a store without sub-users reads one empty result. Passwords stay sealed when no SecretBox is given (the
access table decrypts one on its first use), as for services."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.core.security import SecretBox
from proxyplane.storage.models.subusers import ServiceSubuser, SubuserWhitelist

from .subusers import SubuserEntry

IN_CHUNK = 500


async def _rows(session: AsyncSession, query: Any, column: Any, ids: list[uuid.UUID] | None) -> list[Any]:
    if ids is None:
        return list((await session.execute(query)).all())
    out: list[Any] = []
    for i in range(0, len(ids), IN_CHUNK):
        out.extend((await session.execute(query.where(column.in_(ids[i : i + IN_CHUNK])))).all())
    return out


async def load_subusers(
    session: AsyncSession, box: SecretBox | None, ids: Sequence[uuid.UUID] | None
) -> dict[str, tuple[SubuserEntry, ...]]:
    """{str(service_id): its sub-users} of every service (``ids`` None) or of ``ids``."""
    id_list = None if ids is None else list(ids)
    s, w = ServiceSubuser, SubuserWhitelist
    query = (
        select(
            s.id,
            s.subuser_id,
            s.service_id,
            s.login,
            s.password_enc,
            s.enabled,
            s.limit_reached,
            s.traffic_limit_bytes,
            s.traffic_limit_requests,
            s.used_bytes,
            s.used_requests,
            s.max_connections,
            s.countries,
            s.max_client_ips,
            s.client_ip_policy,
            s.speed_limit_bps,
            w.ip,
        )
        .outerjoin(w, w.subuser_pk == s.id)
        .order_by(s.id)
    )
    rows = await _rows(session, query, s.service_id, id_list)
    whitelist: dict[int, set[str]] = {}
    for row in rows:
        if row[-1] is not None:
            whitelist.setdefault(row[0], set()).add(row[-1])
    out: dict[str, list[SubuserEntry]] = {}
    seen: set[int] = set()
    for (
        pk,
        public_id,
        service_id,
        login,
        password_enc,
        enabled,
        reached,
        limit_bytes,
        limit_requests,
        used_bytes,
        used_requests,
        max_conn,
        countries,
        max_ips,
        ip_policy,
        speed,
        _ip,
    ) in rows:
        if pk in seen:  # one row per whitelist entry
            continue
        seen.add(pk)
        sealed = password_enc if box is None else None
        entry = SubuserEntry(
            pk,
            str(public_id),
            login,
            "" if box is None else box.decrypt(password_enc),
            sealed,
            frozenset(whitelist.get(pk, ())),
            bool(enabled),
            bool(reached),
            limit_bytes,
            limit_requests,
            int(used_bytes or 0),
            int(used_requests or 0),
            int(max_conn or 0),
            frozenset(c.lower() for c in countries) if countries else None,
            max_client_ips=int(max_ips or 0),
            client_ip_policy="newest_wins" if ip_policy == "newest_wins" else "refuse_new",
            speed_bps=int(speed or 0),
        )
        out.setdefault(str(service_id), []).append(entry)
    return {sid: tuple(entries) for sid, entries in out.items()}
