"""Operations: toggle auto-renewal, resume a service suspended for non-payment."""

from __future__ import annotations

import uuid
from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from proxyplane.core.clock import utcnow
from proxyplane.core.errors import Conflict, MissingScope, declares
from proxyplane.core.scopes import Scope
from proxyplane.domains.renewals import service as renewals
from proxyplane.domains.services import service as services
from proxyplane.domains.services.schemas import ServiceOut, service_out
from proxyplane.ops import Context, Effect, Operation, register


class AutoRenewIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    service_id: uuid.UUID
    auto_renew: bool = Field(description="true: renew from the wallet before the term ends")


class AutoRenewOut(BaseModel):
    service_id: uuid.UUID
    auto_renew: bool
    status: str
    expires_at: datetime | None
    next_renewal_at: datetime | None = Field(description="when the job first tries to renew (auto_renew on)")
    renewal_price_cents: int = Field(description="one more term: service with term discount plus add-ons")


class ResumeIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    service_id: uuid.UUID
    idempotency_key: str = Field(min_length=1, max_length=200)


class ResumeOut(BaseModel):
    service: ServiceOut
    charged_cents: int


async def set_auto_renew(ctx: Context, data: AutoRenewIn) -> AutoRenewOut:
    if data.auto_renew and Scope.wallet_spend not in ctx.caller.scopes:
        raise MissingScope(
            "turning auto-renewal on lets the platform pay renewals from the wallet: "
            "the key needs wallet:spend",
            missing_scopes=[Scope.wallet_spend.value],
        )
    svc = await services.get_owned(ctx.session, ctx.customer_id, data.service_id)
    await renewals.set_auto_renew(ctx.session, svc, data.auto_renew)
    policy = renewals.RenewalPolicy.from_env()
    end = svc.current_period_end
    return AutoRenewOut(
        service_id=svc.service_id,
        auto_renew=svc.auto_renew,
        status=services.effective_status(svc),
        expires_at=end,
        next_renewal_at=max(end - policy.renew_before, utcnow()) if end and svc.auto_renew else None,
        renewal_price_cents=await renewals.price_of_term(ctx.session, svc),
    )


async def resume_service(ctx: Context, data: ResumeIn) -> ResumeOut:
    svc = await services.get_owned(ctx.session, ctx.customer_id, data.service_id)
    charged = await renewals.resume(ctx.session, svc)
    sid = svc.service_id
    ctx.uow.after_commit(lambda: ctx.platform.emit(services.ENTITLEMENTS_CHANGED, sid))
    return ResumeOut(service=await service_out(ctx.session, ctx.platform.secrets, svc), charged_cents=charged)


AUTO_RENEW = Operation(
    name="set_auto_renew",
    extra=declares(Conflict),
    summary="Turn auto-renewal on or off (on needs wallet:spend: renewals are paid from the wallet).",
    method="PUT",
    path="/customer/services/{service_id}/auto-renew",
    handler=set_auto_renew,
    input=AutoRenewIn,
    output=AutoRenewOut,
    scopes=frozenset({Scope.services_write}),
    effect=Effect.WRITE,
    tags=("services",),
)
RESUME = Operation(
    name="resume_service",
    summary="Pay one term from the wallet and reactivate a service suspended for non-payment.",
    method="POST",
    path="/customer/services/{service_id}/resume",
    handler=resume_service,
    input=ResumeIn,
    output=ResumeOut,
    scopes=frozenset({Scope.services_write, Scope.wallet_spend}),
    effect=Effect.SPENDS_MONEY,
    tags=("services",),
)
register(AUTO_RENEW, RESUME)
