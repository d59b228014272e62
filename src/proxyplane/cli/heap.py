"""The garbage collector of the long-running processes (`proxyplane serve`, gateway nodes).

CPython's cyclic collector walks every tracked object of a generation when it runs; a full (oldest
generation) pass over a serve process's ~275,000 start-up objects (modules, the app, the route table,
pydantic models, SQLAlchemy metadata) took 50-550 ms under load: every request in flight waits for it, so
it set the p99. `settle()` runs once start-up is done: one collection, then `gc.freeze()` moves everything
still alive to a permanent generation no later pass visits; the first generation's threshold is raised so
the young objects of a burst of requests are counted in fewer, equally short passes (reference counting
frees almost all of them anyway: the collector is only for cycles).
"""

from __future__ import annotations

import gc

YOUNG_THRESHOLD = 10_000  # allocations less deallocations between first-generation passes (CPython: 700)


def settle() -> None:
    gc.collect()
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, middle, old)
