"""`Authorization: Basic <base64(email:password)>` (or `email|password`) -> Caller.

Missing header, another scheme, an unknown account or a wrong password -> 401 `Unauthenticated`; a
credential throttled by the shared password throttle (domains/accounts/throttle.py) -> the same 401 and
body plus `Retry-After` (the document lists 429 for update_list only: docs/decisions/throttling.md); a Basic
token that is not base64 of UTF-8 text holding `email<sep>password` (sep `:` or `|`, the first one wins:
emails hold neither) -> 400 `Invalid credentials format`.

Successful verifications are cached in memory for CACHE_SECONDS, keyed by an HMAC of the decoded
credential and the client address (never the password itself), so a script's burst pays argon2 once. A
hit still reads the account row: a changed password hash or a blocked account drops the entry at once, and
so do two-factor turned on (a cached main password) or off, and a revoked app password.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import time
from collections import OrderedDict
from dataclasses import dataclass

from starlette.requests import Request

from proxyplane.adapters.legacy.render import LegacyError, text_response
from proxyplane.core.scopes import Scope
from proxyplane.domains.legacy import auth as accounts
from proxyplane.domains.legacy.wire import INVALID_FORMAT, UNAUTHENTICATED
from proxyplane.ops import Caller, invoke
from proxyplane.platform import Platform

CACHE_SECONDS = 60.0
CACHE_MAX = 10_000
# what a legacy credential may do: everything the 20 endpoints need, nothing else (no keys, no webhooks)
LEGACY_SCOPES: frozenset[str] = frozenset(
    {
        Scope.catalog_read,
        Scope.services_read,
        Scope.services_write,
        Scope.usage_read,
        Scope.wallet_read,
        Scope.wallet_spend,
        Scope.customer_read,
    }
)


def bad_format() -> LegacyError:
    return LegacyError(text_response(INVALID_FORMAT, 400))


def unauthenticated() -> LegacyError:
    return LegacyError(text_response(UNAUTHENTICATED, 401))


def parse_basic(header: str) -> tuple[str, str]:
    """(email, password) from the header value; raises the 401/400 LegacyError."""
    scheme, _, token = header.strip().partition(" ")
    if not header.strip() or scheme.lower() != "basic":
        raise unauthenticated()
    token = token.strip()
    if not token:
        raise bad_format()
    try:
        text = base64.b64decode(token, validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        raise bad_format() from None
    cut = min((i for i in (text.find(":"), text.find("|")) if i >= 0), default=-1)
    if cut <= 0 or cut == len(text) - 1:
        raise bad_format()
    email, password = text[:cut].strip(), text[cut + 1 :]
    if "@" not in email:
        raise bad_format()
    return email, password


@dataclass
class _Entry:
    customer_id: int
    password_hash: str
    expires: float
    app_hash: str = ""  # the app password's hash when one let it in


class CredentialCache:
    def __init__(self, key: str) -> None:
        self._key = key.encode()
        self._entries: OrderedDict[str, _Entry] = OrderedDict()

    def digest(self, email: str, password: str, client_ip: str) -> str:
        """Per source address too: a hit skips the throttle, so only the address that passed it (and
        verified this very credential) may use the entry; another address's guess is throttled."""
        message = email.strip().lower().encode() + b"\0" + password.encode() + b"\0" + client_ip.encode()
        return hmac.new(self._key, message, hashlib.sha256).hexdigest()

    def get(self, digest: str) -> _Entry | None:
        entry = self._entries.get(digest)
        if entry is None or entry.expires < time.monotonic():
            self._entries.pop(digest, None)
            return None
        return entry

    def put(self, digest: str, customer_id: int, password_hash: str, app_hash: str = "") -> None:
        self._entries[digest] = _Entry(customer_id, password_hash, time.monotonic() + CACHE_SECONDS, app_hash)
        self._entries.move_to_end(digest)
        while len(self._entries) > CACHE_MAX:
            self._entries.popitem(last=False)

    def drop(self, digest: str) -> None:
        self._entries.pop(digest, None)


def _cache(platform: Platform) -> CredentialCache:
    cache = getattr(platform, "legacy_credential_cache", None)
    if cache is None:
        cache = CredentialCache(platform.secret_key)
        platform.legacy_credential_cache = cache  # type: ignore[attr-defined]
    return cache


async def authenticate(platform: Platform, request: Request) -> Caller:
    email, password = parse_basic(request.headers.get("authorization", ""))
    ip = request.client.host if request.client else ""
    agent = request.headers.get("user-agent", "")
    cache = _cache(platform)
    digest = cache.digest(email, password, ip)
    hit = cache.get(digest)
    customer_id: int | None = None
    if hit is not None:
        async with platform.db.unit_of_work(write=False) as uow:
            if await accounts.still_valid(uow.session, hit.customer_id, hit.password_hash, hit.app_hash):
                customer_id = hit.customer_id
            else:
                cache.drop(digest)
    if customer_id is None:
        anonymous = Caller(customer_id=None, client_ip=ip, channel="legacy", user_agent=agent)
        verified = await invoke(
            platform, accounts.SIGN_IN, anonymous, accounts.Credential(email=email, password=password)
        )
        if verified.retry_after:  # throttled: the documented 401 body, byte for byte, plus Retry-After
            refused = unauthenticated()
            refused.response.headers["Retry-After"] = str(verified.retry_after)
            raise refused
        if verified.customer_id is None:
            raise unauthenticated()
        cache.put(digest, verified.customer_id, verified.password_hash, verified.app_password_hash)
        customer_id = verified.customer_id
    return Caller(
        customer_id=customer_id, scopes=LEGACY_SCOPES, client_ip=ip, channel="legacy", user_agent=agent
    )
