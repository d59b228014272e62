"""Wallet operations: balance, ledger, payment methods, top-ups and their status."""

from __future__ import annotations

import uuid
from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from proxyplane.core.bounds import CENTS_MAX, INT32_MAX
from proxyplane.core.errors import ValidationFailed
from proxyplane.core.product_names import humanize
from proxyplane.core.scopes import Scope
from proxyplane.domains.wallet import deposits, service
from proxyplane.ops import Context, Effect, Operation, register
from proxyplane.storage.models import Deposit


class Balance(BaseModel):
    balance_cents: int
    currency: str = "USD"


class LedgerQuery(BaseModel):
    offset: int = Field(default=0, ge=0, le=INT32_MAX)
    limit: int = Field(default=50, ge=1, le=200)


class LedgerItem(BaseModel):
    entry_id: int
    amount_cents: int
    balance_after_cents: int
    kind: str
    description: str
    service_id: uuid.UUID | None
    invoice_id: str | None
    deposit_id: uuid.UUID | None
    created_at: datetime


class LedgerPage(BaseModel):
    items: list[LedgerItem]
    offset: int
    limit: int
    total: int


class PaymentMethodInfo(BaseModel):
    id: str
    name: str
    kyc_required: bool
    available: bool = Field(description="false while the method needs KYC that is not done")


class PaymentMethods(BaseModel):
    processor: str
    min_amount_cents: int
    max_amount_cents: int
    methods: list[PaymentMethodInfo]


class DepositInit(BaseModel):
    model_config = ConfigDict(extra="forbid")
    amount_cents: int = Field(gt=0, le=CENTS_MAX, description="amount to add to the wallet, in cents")
    payment_method: str = Field(min_length=1, max_length=40)
    idempotency_key: str = Field(min_length=1, max_length=200)


class DepositRef(BaseModel):
    deposit_id: uuid.UUID


class DepositInfo(BaseModel):
    deposit_id: uuid.UUID
    status: str = Field(description="pending, paid or failed")
    amount_cents: int
    payment_method: str
    processor: str
    checkout_url: str
    created_at: datetime
    completed_at: datetime | None


def deposit_info(d: Deposit) -> DepositInfo:
    return DepositInfo(
        deposit_id=d.id,
        status=d.status,
        amount_cents=d.amount_cents,
        payment_method=d.payment_method,
        processor=d.processor,
        checkout_url=d.checkout_url,
        created_at=d.created_at,
        completed_at=d.completed_at,
    )


async def get_balance(ctx: Context, _: None) -> Balance:
    return Balance(balance_cents=await service.balance(ctx.session, ctx.customer_id))


async def get_ledger(ctx: Context, q: LedgerQuery) -> LedgerPage:
    rows, total = await service.ledger(ctx.session, ctx.customer_id, q.offset, q.limit)
    items = [
        LedgerItem(
            entry_id=e.id,
            amount_cents=e.amount_cents,
            balance_after_cents=e.balance_after_cents,
            kind=e.kind,
            description=humanize(e.description),  # display names, not proxy_* ids (issue 22.8)
            service_id=e.service_id,
            invoice_id=e.invoice_id,
            deposit_id=e.deposit_id,
            created_at=e.created_at,
        )
        for e in rows
    ]
    return LedgerPage(items=items, offset=q.offset, limit=q.limit, total=total)


async def list_payment_methods(ctx: Context, _: None) -> PaymentMethods:
    from proxyplane.domains.accounts.service import get_customer

    processor = ctx.platform.processor()
    kyc_done = (await get_customer(ctx.session, ctx.customer_id)).kyc_verified_at is not None
    s = ctx.platform.settings
    return PaymentMethods(
        processor=processor.name,
        min_amount_cents=s.min_deposit_cents,
        max_amount_cents=s.max_deposit_cents,
        methods=[
            PaymentMethodInfo(
                id=m.id, name=m.name, kyc_required=m.kyc_required, available=kyc_done or not m.kyc_required
            )
            for m in processor.methods()
        ],
    )


async def init_deposit(ctx: Context, data: DepositInit) -> DepositInfo:
    s = ctx.platform.settings
    if not s.min_deposit_cents <= data.amount_cents <= s.max_deposit_cents:
        raise ValidationFailed(
            f"amount_cents must be between {s.min_deposit_cents} and {s.max_deposit_cents}",
            field="amount_cents",
        )
    d = await deposits.init_deposit(
        ctx.session,
        ctx.platform.processor(),
        ctx.customer_id,
        data.amount_cents,
        data.payment_method,
        data.idempotency_key,
    )
    return deposit_info(d)


async def get_deposit(ctx: Context, data: DepositRef) -> DepositInfo:
    return deposit_info(await deposits.get_deposit(ctx.session, ctx.customer_id, data.deposit_id))


BALANCE = Operation(
    name="get_balance",
    summary="Your wallet balance in cents, derived from the ledger.",
    method="GET",
    path="/customer/wallet/balance",
    handler=get_balance,
    output=Balance,
    scopes=frozenset({Scope.wallet_read}),
    tags=("wallet",),
    doors=frozenset({"rest", "mcp", "legacy"}),  # legacy: GET /api/billing/credit
)
LEDGER = Operation(
    name="get_ledger",
    summary="Wallet ledger entries, newest first.",
    method="GET",
    path="/customer/wallet/ledger",
    handler=get_ledger,
    input=LedgerQuery,
    output=LedgerPage,
    scopes=frozenset({Scope.wallet_read}),
    tags=("wallet",),
)
PAYMENT_METHODS = Operation(
    name="list_payment_methods",
    summary="Payment methods for top-ups, with limits and KYC needs.",
    method="GET",
    path="/customer/wallet/payment-methods",
    handler=list_payment_methods,
    output=PaymentMethods,
    scopes=frozenset({Scope.wallet_read}),
    tags=("wallet",),
)
DEPOSIT_INIT = Operation(
    name="init_deposit",
    summary="Start a top-up: returns a checkout URL; the wallet is credited when the payment is confirmed.",
    method="POST",
    path="/customer/wallet/deposit/init",
    handler=init_deposit,
    input=DepositInit,
    output=DepositInfo,
    scopes=frozenset({Scope.wallet_deposit}),
    effect=Effect.WRITE,
    tags=("wallet",),
)
DEPOSIT_STATUS = Operation(
    name="get_deposit",
    summary="Status of one top-up (pending, paid or failed).",
    method="GET",
    path="/customer/wallet/deposits/{deposit_id}",
    handler=get_deposit,
    input=DepositRef,
    output=DepositInfo,
    scopes=frozenset({Scope.wallet_read}),
    tags=("wallet",),
)
register(BALANCE, LEDGER, PAYMENT_METHODS, DEPOSIT_INIT, DEPOSIT_STATUS)
