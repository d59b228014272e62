"""The one writer of `idempotency_records` on the call path (issue 31: moved from ops.py): a keyed call's
claim (the record inserted before the handler runs) and the store of its response (with the commit).
And the prune of old records (`prune_before`; jobs/idempotency_prune.py runs the passes).

On PostgreSQL the claim goes with the transaction's BEGIN and the store with its COMMIT, each as one
round trip (storage/transaction.begin_with / UnitOfWork.commit_with); elsewhere they are plain driver
statements (storage/driver.py)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, cast

from sqlalchemy import JSON, Dialect, Table, TypeDecorator, bindparam, delete, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.core.clock import utcnow
from proxyplane.storage import transaction
from proxyplane.storage.driver import DriverStatement
from proxyplane.storage.engine import UnitOfWork
from proxyplane.storage.engine_choice import dialect_name
from proxyplane.storage.models import IdempotencyRecord


class _JsonText(TypeDecorator[str]):
    """A JSON column's value bound as JSON text already serialized: no second serialization."""

    impl = JSON
    cache_ok = True

    def bind_processor(self, dialect: Dialect) -> None:
        return None


# built once (cache key memoized, nothing to construct per call); the values are bound at execution
_RECORDS = cast(Table, IdempotencyRecord.__table__)
# and run on the driver connection (storage/driver.py: every keyed call runs both)
_CLAIM: dict[str, DriverStatement] = {
    "postgresql": DriverStatement(pg_insert(_RECORDS).on_conflict_do_nothing().returning(_RECORDS.c.id)),
    "sqlite": DriverStatement(sqlite_insert(_RECORDS).on_conflict_do_nothing().returning(_RECORDS.c.id)),
}
# PostgreSQL, as the transaction's first statement: sent with its BEGIN (the command status tells)
_CLAIM_WITH_BEGIN = DriverStatement(pg_insert(_RECORDS).on_conflict_do_nothing())
_STORE_RESPONSE = DriverStatement(  # by the record's unique key; on PostgreSQL sent with the COMMIT
    update(_RECORDS)
    .where(
        _RECORDS.c.customer_id == bindparam("record_customer"),
        _RECORDS.c.operation == bindparam("record_operation"),
        _RECORDS.c.key == bindparam("record_key"),
    )
    .values(response=bindparam("response", type_=_JsonText()))
)


async def claim(session: AsyncSession, customer_id: int, operation: str, key: str, req_hash: str) -> bool:
    """Insert the key's record (one statement); False when it exists already. A concurrent duplicate on
    PostgreSQL waits here for the first one's commit (or rollback, and then claims the key itself).
    On PostgreSQL the transaction's first statement goes with its BEGIN (one round trip)."""
    values = {
        "customer_id": customer_id,
        "operation": operation,
        "key": key,
        "request_hash": req_hash,
        "response": {},
        "created_at": utcnow(),
    }
    status = await transaction.begin_with(session, _CLAIM_WITH_BEGIN, values)
    if status is not None:
        return status == "INSERT 0 1"
    return await _CLAIM[dialect_name(session)].scalar(session, values) is not None


async def find(session: AsyncSession, customer_id: int, operation: str, key: str) -> IdempotencyRecord | None:
    """The key's record, if any."""
    q = select(IdempotencyRecord).where(
        IdempotencyRecord.customer_id == customer_id,
        IdempotencyRecord.operation == operation,
        IdempotencyRecord.key == key,
    )
    return (await session.execute(q)).scalar_one_or_none()


async def store_and_commit(
    uow: UnitOfWork, customer_id: int, operation: str, key: str, response: str, **commit: Any
) -> None:
    """Store the response (JSON text) in the claimed record and commit the unit of work (one round trip
    on PostgreSQL)."""
    record = {
        "record_customer": customer_id,
        "record_operation": operation,
        "record_key": key,
        "response": response,
    }
    await uow.commit_with(_STORE_RESPONSE, record, **commit)


async def prune_before(session: AsyncSession, cutoff: datetime, batch: int) -> int:
    """Delete up to `batch` records created before `cutoff`, oldest first (the created_at index); how
    many were deleted."""
    oldest = (
        select(IdempotencyRecord.id)
        .where(IdempotencyRecord.created_at < cutoff)
        .order_by(IdempotencyRecord.created_at)
        .limit(batch)
    )
    ids = (await session.execute(oldest)).scalars().all()
    if ids:
        await session.execute(delete(IdempotencyRecord).where(IdempotencyRecord.id.in_(ids)))
    return len(ids)
