"""The operator's orders and services list (issue 33) as one registered operation on every operator door
(CLI, operator API, console): filters by customer, status, kind, product, country, creation day,
expiring soon, unpaid (domains/operators/lists.py)."""

from __future__ import annotations

import uuid
from datetime import date
from typing import Any

from pydantic import BaseModel, Field

from proxyplane.domains.operators import lists, resellers
from proxyplane.ops import OPERATOR_DOORS, Context, Effect, operator_op, register

STATUS = "^(|pending|active|suspended|expired|cancelled)$"


class ServiceFilter(BaseModel):
    customer: str = Field(default="", max_length=320, description="a customer id, email or service login")
    status: str = Field(default="", pattern=STATUS)
    kind: str = Field(default="", max_length=30, description="a product kind, e.g. proxy_isp")
    product_id: uuid.UUID | None = Field(default=None, description="a catalog product")
    country: str = Field(default="", pattern="^([A-Za-z]{2})?$", description="a live exit IP's country")
    created_since: date | None = Field(default=None, description="ordered on or after this UTC day")
    created_until: date | None = Field(default=None, description="ordered on or before this UTC day")
    expiring_within_days: int | None = Field(
        default=None, ge=0, le=366, description="active or suspended, term ending within this many days"
    )
    unpaid: bool = Field(default=False, description="pending with an amount still due at checkout")
    limit: int = Field(default=100, ge=1, le=500)
    offset: int = Field(default=0, ge=0, le=1_000_000)


async def service_list(ctx: Context, data: ServiceFilter) -> dict[str, Any]:
    # a reseller lists its own customers' services only
    return await lists.services(ctx.session, **data.model_dump(), reseller_id=resellers.scope_of(ctx.caller))


SERVICE_LIST = operator_op(
    "service_list",
    service_list,
    ServiceFilter,
    Effect.READ,
    permission="customers.read",
    doors=OPERATOR_DOORS,
    reseller="reseller.customers",
)
register(SERVICE_LIST)
