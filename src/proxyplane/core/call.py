"""What one call carries besides its session: a typed context created with its unit of work.

`UnitOfWork.call` is the CallContext of that transaction. `invoke()` sets `spending_key` (the API key the
call came through) before the handler runs; the wallet adds every debit to `debited_cents` (invoke's money
guard reads it before commit); payment settlement lists the services whose entitlements it changed in
`changed_services` (signalled to the gateway after commit). Services only hold the session, so they reach
the context with `call_context(session)`: one typed object per transaction, nothing else travels beside
the session."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

_BRIDGE = "pp_call"  # the one key of session.info: the unit of work's CallContext


@dataclass
class CallContext:
    spending_key: Any = None  # the calling API key's id (spending caps, domains/apikeys/caps.py)
    debited_cents: int = 0  # cents taken from the wallet in this transaction
    changed_services: list[uuid.UUID] = field(default_factory=list)  # entitlements changed, to signal
    # per open savepoint: `debited_cents` when it was opened (storage/repos/savepoints.py restores it)
    savepoint_marks: dict[str, int] = field(default_factory=dict)

    def attach(self, session: Any) -> None:
        session.info[_BRIDGE] = self


def call_context(session: Any) -> CallContext:
    """The CallContext of the unit of work `session` belongs to (a fresh one for a bare session)."""
    found = session.info.get(_BRIDGE)
    if found is None:
        found = CallContext()
        found.attach(session)
    return found  # type: ignore[no-any-return]
