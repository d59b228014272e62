"""A job loop as a background task for the length of a block (the job worker's parts: renewals, the change
notifier, the stock free-count fold)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any


@contextlib.asynccontextmanager
async def background(
    run: Callable[[asyncio.Event], Coroutine[Any, Any, None]], name: str, grace: float = 5.0
) -> AsyncIterator[None]:
    """Runs `run(stop)` as a task until the block exits; then sets `stop`, gives the loop `grace` seconds to
    finish its pass and cancels it if it has not."""
    stop = asyncio.Event()
    task = asyncio.create_task(run(stop), name=name)
    try:
        yield
    finally:
        stop.set()
        try:
            await asyncio.wait_for(task, grace)
        except (TimeoutError, asyncio.CancelledError):
            task.cancel()
