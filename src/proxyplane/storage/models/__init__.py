"""All models, imported so that Base.metadata knows every table (Alembic reads it)."""

from proxyplane.storage.models.base import Base
from proxyplane.storage.models.customers import ApiKey, Customer
from proxyplane.storage.models.wallet import Deposit, IdempotencyRecord, LedgerEntry, LoginEvent, Wallet

__all__ = [
    "ApiKey",
    "Base",
    "Customer",
    "Deposit",
    "IdempotencyRecord",
    "LedgerEntry",
    "LoginEvent",
    "Wallet",
]
