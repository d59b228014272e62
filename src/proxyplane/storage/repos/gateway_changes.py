"""Reading the gateway change log (table gateway_changes, migration 0012c) by sequence number, and the
wake-ups: the nodes' LISTEN connection and the change notifier's lock and NOTIFY (gateway/store.py,
jobs/change_notifier.py call these; the engine is chosen here, by ``feed_for`` / ``listener_for`` /
``notifies``).

A poll is one statement: ``SELECT seq, key FROM gateway_changes WHERE seq > :last ORDER BY seq LIMIT n``
on the seq index, the same cost at 1,000 and at 250,000 services.

PostgreSQL hands out sequence numbers before commit, so a transaction can commit after a later number
was already read: the read then shows a gap (a "hole"). The feed keeps each hole with the snapshot's
xmax at the time it was seen and re-reads it (``UNION ALL ... WHERE seq = ANY(:holes)``, an index lookup
per hole; a UNION, not an OR: PostgreSQL's generic plan for ``seq > $1 OR seq = ANY($2)`` walks the whole
seq index, 130 ms at 250,000 rows) until a snapshot's xmin has passed that xmax: by then the transaction
that held the number has ended, and the same read saw its row if it committed. The snapshot bounds come
from the poll statement itself. A fresh full load records the same bounds and the transactions its snapshot
saw in progress (``pg_snapshot_xip``); once the bounds pass, it reads once the rows those transactions
wrote (``xid = ANY(:open)``; no statement when none was open). Not ``xid >= xmin``: that also re-read the
keys of transactions that had committed before the load while an older one was still open, and a handful
of those pushed a node over ``max_incremental`` into a needless second full reload. SQLite has one
writer at a time and commits in seq order: no holes.

Wake-ups: on PostgreSQL the change notifier (jobs/change_notifier.py, with the job worker) reads the log
every 50 ms with this same reader (on ``notifier_session``, under ``NOTIFIER_LOCK``) and sends NOTIFY
proxyplane_changes in its own statement (``notify_nodes``) when it advanced (the triggers no longer
notify: migration 0020i, issue 15); ``Listener`` holds a LISTEN connection and wakes the node at once;
the poll stays the backstop (the only wake-up without a notifier).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import BigInteger, bindparam, text
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

from proxyplane.storage.driver import DriverStatement
from proxyplane.storage.engine import Database

log = logging.getLogger("proxyplane.gateway.changes")

CHANNEL = "proxyplane_changes"
PAGE = 2_000  # rows per read; a node further behind reads page after page
MAX_HOLES = 10_000  # more open gaps than this: reload everything instead

PG_READ = text(
    "WITH s AS (SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint AS lo, "
    "pg_snapshot_xmax(pg_current_snapshot())::text::bigint AS hi, "
    "extract(epoch from clock_timestamp())::double precision AS now) "
    "SELECT s.lo, s.hi, c.seq, c.key, c.changed_at, s.now FROM s LEFT JOIN LATERAL ("
    "(SELECT seq, key, changed_at FROM gateway_changes WHERE seq > :last ORDER BY seq LIMIT :n) UNION ALL "
    "(SELECT seq, key, changed_at FROM gateway_changes WHERE seq = ANY(:holes))"
    ") c ON true"
).bindparams(bindparam("holes", type_=ARRAY(BigInteger)))
SQLITE_READ = text(
    "SELECT seq, key, changed_at, (julianday('now') - 2440587.5) * 86400.0 "
    "FROM gateway_changes WHERE seq > :last ORDER BY seq LIMIT :n"
)
PG_MARK = text(
    "SELECT coalesce((SELECT max(seq) FROM gateway_changes), 0), "
    "pg_snapshot_xmin(pg_current_snapshot())::text::bigint, "
    "pg_snapshot_xmax(pg_current_snapshot())::text::bigint, "
    "ARRAY(SELECT x::text::bigint FROM pg_snapshot_xip(pg_current_snapshot()) AS x)"
)
SQLITE_MARK = text("SELECT coalesce(max(seq), 0) FROM gateway_changes")
PG_OPEN_AT_LOAD = text(
    "SELECT seq, key FROM gateway_changes WHERE xid = ANY(:open) AND seq <= :last"
).bindparams(bindparam("open", type_=ARRAY(BigInteger)))
# PostgreSQL's reads run on the driver connection (storage/driver.py): the change notifier reads every
# 50 ms in every serve process, each read through the session's statement path cost ~0.3 ms of CPU
_PG_READ, _PG_MARK, _PG_OPEN_AT_LOAD = (DriverStatement(s) for s in (PG_READ, PG_MARK, PG_OPEN_AT_LOAD))

NOTIFIER_LOCK = 0x70705F6E6F74  # "pp_not": one change notifier per cluster
TRY_LOCK = text(f"SELECT pg_try_advisory_lock({NOTIFIER_LOCK})")
UNLOCK = text(f"SELECT pg_advisory_unlock({NOTIFIER_LOCK})")
NOTIFY = text(f"SELECT pg_notify('{CHANNEL}', '')")
_NOTIFY = DriverStatement(NOTIFY)  # on the driver connection, as the feed's reads (storage/driver.py)


@dataclass
class Batch:
    keys: set[str] = field(default_factory=set)  # service ids (text) and pool:<kind>
    reload_all: bool = False  # too far behind / too many holes: reload everything
    statements: int = 0
    # database clock (unix s) at the read and the newest changed_at among the rows read; None: no rows
    db_now: float | None = None
    newest: float | None = None

    def saw(self, changed_at: float | None, now: float) -> None:
        if changed_at is None:
            return
        self.db_now = now if self.db_now is None else max(self.db_now, now)
        self.newest = changed_at if self.newest is None else max(self.newest, changed_at)

    @property
    def lag(self) -> float | None:
        """Seconds from the newest change read to the read, both on the database clock."""
        if self.db_now is None or self.newest is None:
            return None
        return max(0.0, self.db_now - self.newest)


class ChangeFeed:
    """The last applied seq of one node and the gaps still open below it."""

    def __init__(self, postgres: bool) -> None:
        self.postgres = postgres
        self.last = 0
        self.holes: dict[int, int] = {}  # seq -> xmax of the snapshot that first missed it
        # (xmax, last, transactions in progress) of the last full load's snapshot
        self._catchup: tuple[int, int, list[int]] | None = None

    async def mark(self, session: AsyncSession) -> None:
        """Before a full load: everything up to the current max seq is about to be read."""
        if self.postgres:
            last, _lo, hi, in_progress = (await _PG_MARK.rows(session))[0]
            self._catchup = (int(hi), int(last), [int(x) for x in in_progress])
        else:
            last = (await session.execute(SQLITE_MARK)).scalar_one()
        self.last, self.holes = int(last), {}

    async def read(self, session: AsyncSession, max_keys: int) -> Batch:
        """Keys changed since the last read (at most ``max_keys``, else ``reload_all``)."""
        batch = Batch()
        while True:
            reader = self._read_pg if self.postgres else self._read_sqlite
            full = await reader(session, batch)
            if batch.reload_all or len(batch.keys) > max_keys or len(self.holes) > MAX_HOLES:
                return Batch(
                    reload_all=True, statements=batch.statements, db_now=batch.db_now, newest=batch.newest
                )
            if not full:
                return batch

    async def _read_sqlite(self, session: AsyncSession, batch: Batch) -> bool:
        rows = (await session.execute(SQLITE_READ, {"last": self.last, "n": PAGE})).all()
        batch.statements += 1
        for seq, key, changed_at, now in rows:
            batch.keys.add(key)
            batch.saw(changed_at, now)
            self.last = max(self.last, seq)
        return len(rows) == PAGE

    async def _read_pg(self, session: AsyncSession, batch: Batch) -> bool:
        holes = list(self.holes)
        rows = await _PG_READ.rows(session, {"last": self.last, "holes": holes, "n": PAGE})
        batch.statements += 1
        lo, hi = int(rows[0][0]), int(rows[0][1])
        seen = [(seq, key) for _, _, seq, key, _, _ in rows if seq is not None]
        for row in rows:
            batch.saw(row[4], row[5])
        fresh = sum(1 for seq, _ in seen if seq > self.last)
        top = self.last
        for seq, key in seen:
            batch.keys.add(key)
            self.holes.pop(seq, None)
            top = max(top, seq)
        got = {seq for seq, _ in seen}
        if top - self.last - len(got) > MAX_HOLES:
            batch.reload_all = True
            return False
        for seq in range(self.last + 1, top):
            if seq not in got:
                self.holes[seq] = hi  # its transaction started before this snapshot: xid < hi
        self.last = top
        # a hole whose xmax this snapshot's xmin has passed was read by this very statement if it committed
        for seq in [s for s, x in self.holes.items() if x <= lo]:
            del self.holes[seq]
        if self._catchup is not None and lo >= self._catchup[0]:
            _, last, in_progress = self._catchup
            self._catchup = None
            if in_progress:
                for _, key in await _PG_OPEN_AT_LOAD.rows(session, {"open": in_progress, "last": last}):
                    batch.keys.add(key)
                batch.statements += 1
        return fresh == PAGE


def feed_for(db: Database) -> ChangeFeed:
    """A node's change feed on this store's engine (PostgreSQL: with the snapshot's holes)."""
    return ChangeFeed(postgres=not db.is_sqlite)


def notifies(db: Database) -> bool:
    """Whether nodes of this store are woken by NOTIFY (PostgreSQL; SQLite's nodes poll only)."""
    return not db.is_sqlite


def listener_for(db: Database, wake: Callable[[], None]) -> Listener | None:
    """The LISTEN connection that wakes a node on this store (None on SQLite: no NOTIFY)."""
    return Listener(db.url, wake) if notifies(db) else None


@contextlib.asynccontextmanager
async def notifier_session(db: Database) -> AsyncIterator[AsyncSession]:
    """A session on a connection of its own in autocommit (the change notifier's: each read and NOTIFY is
    its own statement, no transaction held open between ticks). Closed on exit."""
    async with db.engine.connect() as conn:
        auto: AsyncConnection = await conn.execution_options(isolation_level="AUTOCOMMIT")
        session = AsyncSession(bind=auto)
        try:
            yield session
        finally:
            await session.close()


async def take_notifier_lock(session: AsyncSession) -> bool:
    """Try to become the cluster's notifier (an advisory lock held by the session's connection)."""
    return bool((await session.execute(TRY_LOCK)).scalar_one())


async def release_notifier_lock(session: AsyncSession) -> None:
    await session.execute(UNLOCK)


async def notify_nodes(session: AsyncSession) -> None:
    """NOTIFY proxyplane_changes: every listening node polls the log now."""
    await _NOTIFY.rows(session)


class Listener:
    """LISTEN proxyplane_changes on its own asyncpg connection; ``wake()`` on every notification."""

    def __init__(self, url: str, wake: Callable[[], None]) -> None:
        sa_url = make_url(url)
        self.dsn = sa_url.set(drivername="postgresql").render_as_string(hide_password=False)
        self.wake = wake
        self._conn: Any = None
        self._next_try = 0.0

    @property
    def connected(self) -> bool:
        return self._conn is not None and not self._conn.is_closed()

    async def ensure(self) -> None:
        """(Re)connect when not connected; at most one attempt every 5 s. Never raises."""
        loop = asyncio.get_running_loop()
        if self.connected or loop.time() < self._next_try:
            return
        self._next_try = loop.time() + 5.0
        try:
            import asyncpg

            conn = await asyncpg.connect(self.dsn)
            await conn.add_listener(CHANNEL, self._notified)
        except Exception as exc:  # noqa: BLE001  (the poll keeps working without it)
            log.warning("gateway change listener: cannot LISTEN (%s); polling only", exc)
            return
        self._conn = conn
        self.wake()  # anything committed while not listening

    def _notified(self, *_args: Any) -> None:
        self.wake()

    async def close(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(Exception):
                await self._conn.close()
            self._conn = None
