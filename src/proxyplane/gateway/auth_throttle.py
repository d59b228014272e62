"""Proxy-password guessing throttled per source address (issue 30.2), on every credential path: HTTP
(Proxy-Authorization, both tunnel paths), SOCKS5 RFC 1929 (Python and C engine).

The same policy arithmetic as the API's shared throttle (core/throttling.py), but its state lives in each
gateway process's memory (MemoryBuckets): a proxy login is checked on every connection, must cost no
database round trip and must keep working while the store is down (the gateway serves from its loaded
table then). So the ceiling is per process: N workers on M nodes let N x M times the rate through in the
worst case (docs/decisions/throttling.md). Only failures count (an unknown login, a wrong password);
while an address is over its burst every credential from it is refused without being checked, so an
attacker learns nothing from a correct guess made too early. Whitelist (no-credential) clients are not
throttled: they guess nothing.
"""

from __future__ import annotations

import ipaddress
import time
from collections.abc import Callable

from proxyplane.core.throttling import Decision, MemoryBuckets, Policy

from .access import AccessProvider, AuthError, Grant, authenticate
from .auth_reasons import AuthFailure

# 50 failures back to back, then one every 6 s (10 a minute, 14,400 a day per address and process)
PROXY_ADDRESS = Policy("proxy-ip", burst=50, drain_seconds=6)
THROTTLED = "auth_throttled"  # the refusal's error category and metric label
COUNTED = frozenset({AuthFailure.UNKNOWN_LOGIN.value, AuthFailure.WRONG_PASSWORD.value})


def refusal_text(decision: Decision) -> str:
    return f"too many failed proxy logins from this address: retry in {decision.retry_after_header} s"


class ProxyAuthThrottle:
    def __init__(
        self,
        policy: Policy = PROXY_ADDRESS,
        clock: Callable[[], float] = time.monotonic,
        max_addresses: int = 100_000,
    ) -> None:
        self.buckets = MemoryBuckets(policy, max_addresses)
        self.clock = clock
        self._failure_listeners: list[Callable[[str], None]] = []

    def on_failure(self, callback: Callable[[str], None]) -> None:
        """``callback(client_ip)`` runs after each counted failure (the tunnel engine's decision cache
        forgets the address's decisions: while it is over its burst nothing from it may pass unchecked)."""
        self._failure_listeners.append(callback)

    def authenticate(
        self, access: AccessProvider, static_ip: str | None, client_ip: str, login: str, password: str
    ) -> Grant:
        """``access.authenticate`` for a login and password from ``client_ip``: AuthError(THROTTLED)
        while the address is over its burst (nothing checked), else the grant or the usual AuthError
        (an unknown login or a wrong password counted against the address)."""
        key = address_key(client_ip)
        now = self.clock()
        decision = self.buckets.check(key, now)
        if not decision.allowed:
            raise AuthError(refusal_text(decision), THROTTLED)
        try:
            return authenticate(access, static_ip, client_ip, login, password)
        except AuthError as exc:
            if exc.reason in COUNTED:
                self.buckets.record_failure(key, now)
                for callback in self._failure_listeners:
                    callback(client_ip)
            raise


def address_key(client_ip: str) -> str:
    """The bucket of an address: IPv4 as is, IPv6 per /64 (one host owns a whole /64)."""
    if ":" not in client_ip:
        return client_ip
    if client_ip.startswith("::ffff:") and "." in client_ip:
        return client_ip[7:]
    try:
        return str(ipaddress.IPv6Network((client_ip.split("%")[0], 64), strict=False))
    except ValueError:
        return client_ip
