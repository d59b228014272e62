"""The gateway's background loops: run a step after each wait, log and retry on failure, cancel on close."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable

REPEAT_LOG_SECONDS = 60.0


async def run_forever(
    step: Callable[[], Awaitable[None]],
    wait: Callable[[], Awaitable[object]],
    log: logging.Logger,
    failure: str,
    backoff: float = 0.0,
) -> None:
    """Loop ``wait(); step()`` until cancelled; an exception in ``step`` is logged as ``failure`` and retried
    (after ``backoff`` seconds when given). A run of failures (a store outage: the loops retry several times
    a second) logs the first with its traceback, then one line a minute, and one line when a step succeeds
    again: the log says what happened without filling a disk or a pipe."""
    failing_since: float | None = None
    last_logged = 0.0
    while True:
        await wait()
        try:
            await step()
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            now = time.monotonic()
            if failing_since is None:
                failing_since = last_logged = now
                log.exception(failure)
            elif now - last_logged >= REPEAT_LOG_SECONDS:
                last_logged = now
                log.error("%s (still failing for %.0f s: %s)", failure, now - failing_since, exc)
            if backoff:
                await asyncio.sleep(backoff)
        else:
            if failing_since is not None:
                log.warning("%s: recovered after %.1f s", failure, time.monotonic() - failing_since)
                failing_since = None


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
