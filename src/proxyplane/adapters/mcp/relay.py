"""What one API process tells the others (issue 35.3): messages in the store's `mcp_relay` table, read by
every process's poller. Kinds: `reply` (a client's answer to a question another process asked: its target
is that process's token), `closed` (a session its client ended: every process drops its copy), `event`
(an account's listen-stream event: every process delivers it to its own streams of that account).

Polled, not LISTEN/NOTIFY: the same on both engines (SQLite in one process or several on one file), and a
store outage or restart needs no reconnect logic (the next poll just works). A poll is one indexed read
every POLL_SECONDS; a relayed answer waits at most that long. Ids come from a sequence, and a transaction
that took a lower id may commit after a higher one was read: an id a poll skipped is asked for again by
the next polls for LOOKBACK_SECONDS (a message's insert commits in milliseconds; an id rolled back or
skipped by the sequence is never found, and forgotten then)."""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from proxyplane.domains.agent import mcp_state
from proxyplane.ops import Caller, invoke
from proxyplane.platform import Platform

log = logging.getLogger(__name__)
POLL_SECONDS = 0.2
LOOKBACK_SECONDS = 2.0
PRUNE_SECONDS = 30.0
Handler = Callable[[mcp_state.RelayMessage], Awaitable[None]]


class Relay:
    """This process's side of the relay: `send` a message, `run` the poller that hands the others'
    messages to the handler of their kind."""

    def __init__(self, platform: Platform, idle_seconds: float) -> None:
        self.platform = platform
        self.idle_seconds = idle_seconds
        self.token = uuid.uuid4().hex[:12]  # this process, in reply targets and request ids
        self.handlers: dict[str, Handler] = {}
        self._caller = Caller.anonymous(channel="mcp")
        self._missing: dict[int, float] = {}  # ids skipped by a poll -> when first missed

    async def call(self, op: Any, data: Any) -> Any:
        return await invoke(self.platform, op, self._caller, data)

    async def send(self, kind: str, target: str, body: Any) -> None:
        message = mcp_state.RelayMessage(kind=kind, target=target, origin=self.token, body=body)
        await self.call(mcp_state.SEND, message)

    async def run(self) -> None:
        cursor = await self._start()
        pruned = time.monotonic()
        failing = False
        while True:
            await anyio.sleep(POLL_SECONDS)
            try:
                cursor = await self.poll(cursor)
                if time.monotonic() - pruned > PRUNE_SECONDS:
                    pruned = time.monotonic()
                    await self.call(mcp_state.PRUNE, mcp_state.Prune(idle_seconds=self.idle_seconds))
                if failing:
                    log.warning("MCP relay: the store answers again")
                failing = False
            except Exception:  # a store outage: keep polling, log it once
                if not failing:
                    log.warning("MCP relay: cannot read the store; retrying", exc_info=True)
                failing = True

    async def _start(self) -> int:
        while True:
            try:
                batch = await self.call(mcp_state.READ, mcp_state.RelayRead(after_id=-1))
                return int(batch.last_id)
            except Exception:
                log.warning("MCP relay: cannot read the store at start; retrying", exc_info=True)
                await anyio.sleep(1.0)

    async def poll(self, cursor: int) -> int:
        """Handle the messages above `cursor` and the late ones among the ids skipped before; the next
        cursor (the highest id read)."""
        now = time.monotonic()
        self._missing = {i: t for i, t in self._missing.items() if t > now - LOOKBACK_SECONDS}
        query = mcp_state.RelayRead(after_id=cursor, missing=sorted(self._missing)[:1000])
        batch = await self.call(mcp_state.READ, query)
        expected = cursor + 1
        for message in batch.messages:
            if message.id in self._missing:
                del self._missing[message.id]
            elif message.id > cursor:
                for skipped in range(expected, min(message.id, expected + 1000)):  # bounded: a jump
                    self._missing[skipped] = now
                expected = message.id + 1
            else:
                continue  # read already
            if message.origin == self.token:
                continue
            handler = self.handlers.get(message.kind)
            if handler is not None:
                try:
                    await handler(message)
                except Exception:
                    log.exception("MCP relay: handling a %s message failed", message.kind)
        return int(batch.last_id)
