"""cli/heap.settle: start-up's objects leave the collector's generations (no full pass walks them while
serving) and the first generation is collected less often."""

from __future__ import annotations

import gc

from proxyplane.cli import heap


def test_settle_freezes_what_start_up_left_and_raises_the_young_threshold() -> None:
    before = gc.get_threshold()
    start_up = [{"i": i} for i in range(1000)]  # long-lived objects made during start-up
    try:
        heap.settle()
        assert gc.get_freeze_count() >= len(start_up)
        assert all(not any(o is x for x in gc.get_objects(generation=2)) for o in start_up[:3])
        assert gc.get_threshold()[0] == heap.YOUNG_THRESHOLD > before[0]
        assert gc.get_threshold()[1:] == before[1:]
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)
