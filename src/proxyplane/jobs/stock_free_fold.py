"""Folding the stock's free-count deltas (domains/stock/free_counts.py) into one row per key, each fold in
its own transaction. Orders that fill or free IPs add delta rows (one per IP of a dedicated pool), so
readers would sum more and more rows: a background task of the job worker (`proxyplane serve` and
`proxyplane worker`) folds every second once there are more than FOLD_ABOVE rows, and the renewal job's
pass folds whatever is left every minute. Several folders at once are safe (see
storage/repos/stock_free.fold)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

from sqlalchemy import func, select

from proxyplane.jobs.background import background
from proxyplane.storage.engine import Database
from proxyplane.storage.models.stock_free import StockFree
from proxyplane.storage.repos import stock_free

log = logging.getLogger("proxyplane.stock")
FOLD_ABOVE = 256  # rows: a reader's sum stays well under a millisecond
INTERVAL_SECONDS = 1.0


async def fold_free_counts(db: Database) -> int:
    """The number of delta rows there were before the fold. PostgreSQL: a fold of many rows is followed
    by a VACUUM of the (small) table, so readers do not wade through the dead rows until autovacuum."""
    async with db.unit_of_work() as uow:
        before = await stock_free.fold(uow.session)
        await uow.commit()
    if before > FOLD_ABOVE:
        await stock_free.vacuum(db)
    return before


async def _rows(db: Database) -> int:
    async with db.unit_of_work(write=False) as uow:
        return int(await uow.session.scalar(select(func.count()).select_from(StockFree)) or 0)


async def run_folds(db: Database, stop: asyncio.Event, interval: float = INTERVAL_SECONDS) -> None:
    while not stop.is_set():
        try:
            if await _rows(db) > FOLD_ABOVE:
                await fold_free_counts(db)
        except Exception:  # a failed fold leaves the deltas (still exact): try again next time
            log.exception("stock free-count fold failed")
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), interval)


@contextlib.asynccontextmanager
async def fold_task(db: Database) -> AsyncIterator[None]:
    """Runs `run_folds` in the background until the block exits."""
    async with background(lambda stop: run_folds(db, stop), "stock-free-fold"):
        yield
