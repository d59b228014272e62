"""A hung test ends the run with a diagnosis instead of holding CI until its 90-minute limit.

A test (setup, call and teardown together) that runs longer than PROXYPLANE_TEST_HANG_SECONDS (default
600; 0 turns the watchdog off) gets every thread's stack and every running asyncio loop's pending tasks
written to the real stderr, then the run is interrupted (KeyboardInterrupt in the main thread: pytest
prints its summary and exits non-zero; a run that does not end 30 s later exits with status 70). No test
of the suite comes near the limit; one that does is hung.
"""

from __future__ import annotations

import _thread
import asyncio
import faulthandler
import gc
import os
import sys
import threading
import time
from collections.abc import Iterator
from types import FrameType

import pytest

LIMIT = float(os.environ.get("PROXYPLANE_TEST_HANG_SECONDS", "600"))
GRACE = 30.0


def _running_loops() -> list[asyncio.AbstractEventLoop]:
    return [o for o in gc.get_objects() if isinstance(o, asyncio.AbstractEventLoop) and o.is_running()]


def _await_chain(coro: object) -> Iterator[FrameType]:
    """The frames a task waits in, outermost first (the coroutines each one awaits, down to a future)."""
    while coro is not None:
        frame = getattr(coro, "cr_frame", None) or getattr(coro, "gi_frame", None)
        if frame is not None:
            yield frame
        coro = getattr(coro, "cr_await", None) or getattr(coro, "gi_yieldfrom", None)


def diagnose(nodeid: str, seconds: float, out: object = None) -> None:
    """Every thread's stack and every running loop's unfinished tasks (with their stacks) to `out`."""
    stream = out if out is not None else sys.__stderr__
    write = stream.write  # type: ignore[attr-defined]
    write(f"\n!!! watchdog: {nodeid} still running after {seconds:.0f} s; its threads and tasks:\n")
    faulthandler.dump_traceback(file=stream, all_threads=True)  # type: ignore[arg-type]
    for loop in _running_loops():
        for task in list(asyncio.all_tasks(loop)):
            write(f"--- task {task.get_name()}: {task.get_coro()!r}\n")
            for frame in list(_await_chain(task.get_coro()))[-16:]:
                write(f"    {frame.f_code.co_filename}:{frame.f_lineno} in {frame.f_code.co_name}\n")
    stream.flush()  # type: ignore[attr-defined]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    if LIMIT <= 0:
        yield
        return

    def fire() -> None:
        capture = item.config.pluginmanager.getplugin("capturemanager")
        if capture is not None:  # the main thread is stuck: the real stderr is ours to write on
            capture.suspend_global_capture(in_=False)
        diagnose(item.nodeid, LIMIT, sys.stderr)
        _thread.interrupt_main()
        time.sleep(GRACE)  # a run too stuck to end on the interrupt ends here
        sys.stderr.write(f"!!! watchdog: the run did not end {GRACE:.0f} s after the interrupt; exiting\n")
        sys.stderr.flush()
        os._exit(70)

    timer = threading.Timer(LIMIT, fire)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
