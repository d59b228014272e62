"""The legacy account API's operations, registered like every other one with their scopes and effect,
served by the "legacy" door only (adapters/legacy/routes.py: its paths, Basic auth and exact bodies)."""

from proxyplane.domains.legacy import auth, billing, handlers, lists, service_put, sticky
from proxyplane.ops import register

register(
    auth.SIGN_IN,  # the door's credential check (every route, before its operation)
    handlers.CLIENTS,
    handlers.SERVICES,
    handlers.SERVICE,
    handlers.PRODUCTS,
    handlers.PRODUCT,
    handlers.ORDER,
    billing.INVOICES,
    billing.INVOICE,
    service_put.PUT,
    lists.IPLIST,
    lists.INACTIVE,
    lists.ERRORS,
    sticky.STATS,
    sticky.RATE,
    sticky.LIST,
    sticky.ROTATE,
    sticky.TTL,
    sticky.RESET,
)
