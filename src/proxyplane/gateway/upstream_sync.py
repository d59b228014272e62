"""A node's upstream pools from the store (issue 36.4): every ``interval`` the active suppliers are read
(a few rows; passwords decrypted here, held in memory only) into the context's ``UpstreamDirectory``.
The bytes, tunnels and failures counted per supplier are not written here: they are the meter's rows
(``Meter.supplier``) and go through the usage spool like the customers' usage (gateway/usage_sink.py)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any

from proxyplane.core.proxy_chain import TemplateError, parse_template
from proxyplane.core.security import SecretBox
from proxyplane.storage.engine import Database
from proxyplane.storage.repos import upstreams as repo

from . import periodic
from .upstream_pools import UpstreamDirectory, UpstreamEntry

log = logging.getLogger(__name__)


class UpstreamSync:
    def __init__(self, db: Database, box: SecretBox, directory: UpstreamDirectory,
                 interval: float = 2.0) -> None:
        self.db, self.box, self.directory, self.interval = db, box, directory, interval
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        await self.sync()
        self._task = asyncio.ensure_future(
            periodic.run_forever(self.sync, lambda: asyncio.sleep(self.interval), log,
                                 "upstream pool sync failed; retrying")
        )

    def entries(self, rows: Sequence[Sequence[Any]]) -> list[UpstreamEntry]:
        out = []
        for upstream_id, pool, position, scheme, host, port, username, password_enc, template, health in rows:
            try:
                parsed = parse_template(template)
                password = self.box.decrypt(password_enc) if password_enc else ""
            except (TemplateError, ValueError) as exc:  # checked at registration; a changed server key
                log.error("upstream %s left out: %s", upstream_id, exc)
                continue
            out.append(UpstreamEntry(str(upstream_id), pool, position, scheme, host, port, username, password,
                                     parsed, health))
        return out

    async def sync(self) -> None:
        async with self.db.unit_of_work(write=False) as uow:
            rows = await repo.active_rows(uow.session)
        self.directory.replace(self.entries(rows))

    async def close(self) -> None:
        await periodic.cancel(self._task)
        self._task = None
