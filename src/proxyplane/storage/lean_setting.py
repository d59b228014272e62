"""The one setting of the lean storage machinery (issue 31): environment PROXYPLANE_LEAN_STORAGE, on unless
"0", read once at import. A leaf module (storage/driver.py, storage/transaction.py, storage/engine.py and
storage/engine_choice.py all read it, so none of them imports another for it).

Off, every lean form gives way to its plain twin: the lean PostgreSQL statements (storage/repos/orders.py,
the allocation's CTE), driver statements (storage/driver.py: through the session instead of the driver
connection), the lean session (UnitOfWork(lean=True) opens a plain AsyncSession), BEGIN/COMMIT sent with a
statement and the driver COMMIT (storage/transaction.py), and SQLite's loop-thread driver
(storage/sqlite_driver.py: plain aiosqlite). A test run with it off makes the plain path the oracle.
"""

from __future__ import annotations

import os

LEAN = os.environ.get("PROXYPLANE_LEAN_STORAGE", "1") != "0"
