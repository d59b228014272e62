"""All models, imported so that Base.metadata knows every table (Alembic reads it)."""

from proxyplane.storage.models import account_security as _account_security  # noqa: F401  (issue 34)
from proxyplane.storage.models import billing as _billing  # noqa: F401  (add-ons, invoices: issue 5)
from proxyplane.storage.models import billing_details as _billing_details  # noqa: F401  (issue 22.8)
from proxyplane.storage.models import client_ips as _client_ips  # noqa: F401  (anti-sharing: issue 32.5)
from proxyplane.storage.models import gateway as _gateway  # noqa: F401  (usage, sticky sessions: issue 9)
from proxyplane.storage.models import gateway_changes as _gateway_changes  # noqa: F401  (issue 14)
from proxyplane.storage.models import gateway_health as _gateway_health  # noqa: F401  (issue 9)
from proxyplane.storage.models import gateway_nodes as _gateway_nodes  # noqa: F401  (issue 14.1)
from proxyplane.storage.models import mail as _mail  # noqa: F401  (email outbox: issue 34)
from proxyplane.storage.models import mcp_sessions as _mcp_sessions  # noqa: F401  (shared MCP: issue 35.3)
from proxyplane.storage.models import oauth as _oauth  # noqa: F401  (MCP OAuth 2.1: issue 21.2)
from proxyplane.storage.models import operators as _operators  # noqa: F401  (operator side: issue 33)
from proxyplane.storage.models import prefixes as _prefixes  # noqa: F401  (IPv6 prefixes: issue 16)
from proxyplane.storage.models import quotas as _quotas  # noqa: F401  (service quotas: issue 32)
from proxyplane.storage.models import resellers as _resellers  # noqa: F401  (resellers: issue 33.4)
from proxyplane.storage.models import spending as _spending  # noqa: F401  (API-key spending caps: issue 10)
from proxyplane.storage.models import stock_free as _stock_free  # noqa: F401  (free-IP counts: issue 15)
from proxyplane.storage.models import subuser_rollups as _subuser_rollups  # noqa: F401  (issue 18)
from proxyplane.storage.models import subusers as _subusers  # noqa: F401  (sub-users: issue 18)
from proxyplane.storage.models import team as _team  # noqa: F401  (team accounts: issue 34.5)
from proxyplane.storage.models import throttles as _throttles  # noqa: F401  (issue 30)
from proxyplane.storage.models import ticket_desk as _ticket_desk  # noqa: F401  (ticket desk: issue 33)
from proxyplane.storage.models import upstreams as _upstreams  # noqa: F401  (upstream suppliers: issue 36)
from proxyplane.storage.models import usage_rollups as _usage_rollups  # noqa: F401  (issue 15)
from proxyplane.storage.models.base import Base
from proxyplane.storage.models.customers import ApiKey, Customer
from proxyplane.storage.models.ip_geo import IpGeo
from proxyplane.storage.models.legacy import LegacyListUpdate
from proxyplane.storage.models.services import (
    CatalogProduct,
    PriceBookOverride,
    Service,
    ServiceIp,
    ServiceWhitelist,
)
from proxyplane.storage.models.stock import StockIp
from proxyplane.storage.models.usage_batches import UsageBatch
from proxyplane.storage.models.wallet import Deposit, IdempotencyRecord, LedgerEntry, LoginEvent, Wallet
from proxyplane.storage.models.web import WebSession
from proxyplane.storage.models.webhooks import (
    Event,
    NotificationSettings,
    Ticket,
    TicketMessage,
    WebhookDelivery,
    WebhookEndpoint,
)

__all__ = [
    "ApiKey",
    "Base",
    "CatalogProduct",
    "Customer",
    "Deposit",
    "IdempotencyRecord",
    "IpGeo",
    "LedgerEntry",
    "LegacyListUpdate",
    "LoginEvent",
    "PriceBookOverride",
    "Service",
    "ServiceIp",
    "ServiceWhitelist",
    "StockIp",
    "Wallet",
    "WebSession",
    "Event",
    "NotificationSettings",
    "Ticket",
    "TicketMessage",
    "UsageBatch",
    "WebhookDelivery",
    "WebhookEndpoint",
]
