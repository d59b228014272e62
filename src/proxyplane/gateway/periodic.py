"""The gateway's background loops: run a step after each wait, log and retry on failure, cancel on close."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable


async def run_forever(
    step: Callable[[], Awaitable[None]],
    wait: Callable[[], Awaitable[object]],
    log: logging.Logger,
    failure: str,
    backoff: float = 0.0,
) -> None:
    """Loop ``wait(); step()`` until cancelled; an exception in ``step`` is logged as ``failure`` and retried
    (after ``backoff`` seconds when given)."""
    while True:
        await wait()
        try:
            await step()
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception(failure)
            if backoff:
                await asyncio.sleep(backoff)


async def woken_or_timeout(wake: asyncio.Event, timeout: float) -> None:
    """Wait until ``wake`` is set or ``timeout`` seconds pass, then clear it."""
    with contextlib.suppress(asyncio.TimeoutError):
        await asyncio.wait_for(wake.wait(), timeout)
    wake.clear()


async def cancel(task: asyncio.Task[None] | None) -> None:
    """Cancel a background loop and wait for it to end (its own errors are not raised)."""
    if task is not None:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task
