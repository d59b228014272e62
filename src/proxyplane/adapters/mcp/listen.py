"""`subscriptions/listen` per account (2026-07-28, SEP-2575; issue 21.5): the SDK's listen handler
registers each stream on a `SubscriptionBus`; this bus remembers whose stream it is (the customer of the
key that opened it, set by `ListenerAccount` around the listen request) so an account's own events — the
`proxyplane://account/limits` resource updated when a limit is near — reach only that account's streams.
Events published for everyone (`publish`) still reach every stream. Shared by the API processes (issue
35.3): an event goes to this process's streams at once and through the relay (relay.py, kind `event`) to
the other processes' streams of that account, within a poll (0.2 s). A stream is an open response of one
process: when that process ends, its streams end and their clients listen again (the SDK's streams are
not resumable; the event is a signal to re-read the resource, so one missed meanwhile is re-read then)."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import Any

import anyio.lowlevel
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.subscriptions import (
    PromptsListChanged,
    ResourcesListChanged,
    ResourceUpdated,
    ServerEvent,
    ToolsListChanged,
)

from proxyplane.adapters.mcp.relay import Relay
from proxyplane.domains.agent.mcp_state import RelayMessage

log = logging.getLogger(__name__)
LISTEN = "subscriptions/listen"
_LISTENER: ContextVar[int | None] = ContextVar("proxyplane_mcp_listener", default=None)


@contextlib.contextmanager
def streams_owned_by(customer_id: int | None) -> Iterator[None]:
    """Streams subscribed to an `AccountBus` inside this block belong to this customer."""
    token = _LISTENER.set(customer_id)
    try:
        yield
    finally:
        _LISTENER.reset(token)


class AccountBus:
    """A `SubscriptionBus` whose streams belong to accounts (customer ids)."""

    def __init__(self) -> None:
        self._listeners: dict[object, tuple[int | None, Callable[[ServerEvent], None]]] = {}
        self.relay: Relay | None = None

    def share(self, relay: Relay) -> None:
        """Send this process's events to the other processes' streams, and deliver theirs here."""
        self.relay = relay
        relay.handlers["event"] = self._relayed

    def subscribe(self, listener: Callable[[ServerEvent], None]) -> Callable[[], None]:
        token = object()
        self._listeners[token] = (_LISTENER.get(), listener)

        def unsubscribe() -> None:
            self._listeners.pop(token, None)

        return unsubscribe

    async def publish(self, event: ServerEvent) -> None:
        await self._deliver(event, lambda _: True)
        if self.relay is not None:
            await self.relay.send("event", "", _encode(event))

    async def publish_to(self, customer_id: int, event: ServerEvent) -> None:
        """Deliver `event` to the streams opened by keys of this customer only (on every process)."""
        await self._deliver(event, lambda owner: owner == customer_id)
        if self.relay is not None:
            await self.relay.send("event", str(customer_id), _encode(event))

    async def _relayed(self, message: RelayMessage) -> None:
        event = _decode(message.body)
        if event is None:
            return
        if message.target == "":
            await self._deliver(event, lambda _: True)
        else:
            await self._deliver(event, lambda owner: str(owner) == message.target)

    async def _deliver(self, event: ServerEvent, wanted: Callable[[int | None], bool]) -> None:
        for owner, listener in list(self._listeners.values()):
            if not wanted(owner):
                continue
            try:
                listener(event)
            except Exception:  # one bad listener must not starve the others (as the SDK's bus)
                log.exception("subscription listener raised; continuing")
        await anyio.lowlevel.checkpoint()

    def streams_of(self, customer_id: int) -> int:
        return sum(1 for owner, _ in self._listeners.values() if owner == customer_id)


class ListenerAccount:
    """SDK server middleware: while a `subscriptions/listen` request runs (its handler subscribes to the
    bus), the customer of the request's key is the stream's owner."""

    def __init__(self, principal_key: str) -> None:
        self.principal_key = principal_key

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.method != LISTEN:
            return await call_next(ctx)
        state = getattr(ctx.request, "scope", {}).get("state") or {}
        principal = state.get(self.principal_key)
        with streams_owned_by(principal.customer_id if principal is not None else None):
            return await call_next(ctx)


_EVENTS: dict[str, type[Any]] = {
    "tools_list_changed": ToolsListChanged,
    "prompts_list_changed": PromptsListChanged,
    "resources_list_changed": ResourcesListChanged,
    "resource_updated": ResourceUpdated,
}


def _encode(event: ServerEvent) -> dict[str, Any]:
    kind = next(name for name, cls in _EVENTS.items() if isinstance(event, cls))
    return {"kind": kind, **({"uri": event.uri} if isinstance(event, ResourceUpdated) else {})}


def _decode(body: Any) -> ServerEvent | None:
    cls = _EVENTS.get(body.get("kind", "")) if isinstance(body, dict) else None
    if cls is None:
        return None
    return ResourceUpdated(uri=str(body.get("uri", ""))) if cls is ResourceUpdated else cls()
