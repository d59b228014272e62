"""Events: the catalogue of event types and emit(), which writes an event and its webhook outbox rows."""

from proxyplane.domains.events.catalogue import EVENT_TYPES
from proxyplane.domains.events.service import emit

__all__ = ["EVENT_TYPES", "emit"]
