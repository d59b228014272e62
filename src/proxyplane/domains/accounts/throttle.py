"""The one throttle of every password check and sign-up (issue 30), its state shared by all API processes
(table `auth_throttles`, written only by storage/repos/throttles.py; the arithmetic: core/throttling.py).

Nothing is ever locked out: each key is a leaky bucket that, once its burst is spent, allows one attempt
per `drain_seconds` (docs/decisions/throttling.md has the numbers and why). A password check from an
unknown source counts against three keys: (account, address) — the attacker's own address slows down
first —, the address alone (one address trying many accounts), and the account alone: a ceiling over all
addresses. The owner's known address (a successful sign-in from it in the last 90 days) counts only on
its (account, address) pair, a known device (a signed cookie from a previous sign-in in that browser)
only on its (account, device) pair, so an attacker spraying from many addresses slows every unknown
source down to the ceiling's rate while the owner still gets in.

Usage (inside a writing unit of work, e.g. an operation's handler; the row locks taken by `check` hold
until the transaction ends, so parallel guesses on one key queue up):

    keys = throttle.password_keys("customer:" + email, client_ip,
                                  known_address=await throttle.known_address(session, customer_id, ip),
                                  device=throttle.device_of(secret, cookie_value, "customer:" + email))
    decision = await throttle.check(session, keys)
    if not decision.allowed:
        ...refuse: 429 / Retry-After: decision.retry_after_header (verify nothing)
    if verify_password(...):
        await throttle.record_success(session, keys)
    else:
        await throttle.record_failure(session, keys)   # the caller must then COMMIT (return, not raise)

Other secrets reuse it with their own subject and policies, e.g. operator sign-in
`password_keys("operator:" + email, ip, ...)`, TOTP codes `[Key(TOTP_CODE, f"customer:{id}")]`, and
sign-ups `signup_keys(ip)` (record_failure after each created account: it counts events, not only
failures). The gateway's proxy passwords use the same core/throttling.py buckets in memory, per source
address (gateway/auth_throttle.py: the gateway imports no domain code and must work while the store is down).
"""

from __future__ import annotations

import ipaddress
import random
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.core.clock import as_utc, utcnow
from proxyplane.core.security import sign, verify_signature
from proxyplane.core.throttling import ALLOWED, Decision, Policy, decide
from proxyplane.storage.models import LoginEvent
from proxyplane.storage.repos import throttles as repo

# password checks (dashboard, OAuth's sign-in page, legacy Basic; operators reuse them)
PASSWORD_ACCOUNT_ADDRESS = Policy("pw-acct-ip", burst=5, drain_seconds=300, reset_on_success=True)
PASSWORD_ACCOUNT_DEVICE = Policy("pw-acct-dev", burst=5, drain_seconds=300, reset_on_success=True)
PASSWORD_ADDRESS = Policy("pw-ip", burst=100, drain_seconds=3)
PASSWORD_ACCOUNT = Policy("pw-acct", burst=20, drain_seconds=30)
# one-time codes (TOTP, recovery codes: issue 34 / 33): 6 digits need a tighter bucket per account
TOTP_CODE = Policy("totp", burst=5, drain_seconds=60, reset_on_success=True)
# ...and per address over every account (one address guessing the codes of many accounts whose passwords it
# holds); a right code does not empty it
TOTP_ADDRESS = Policy("totp-ip", burst=10, drain_seconds=30)
# sign-ups: per address and over the whole platform (counted per account created)
SIGNUP_ADDRESS = Policy("signup-ip", burst=5, drain_seconds=720)
SIGNUP_ALL = Policy("signup-all", burst=100, drain_seconds=3)

KNOWN_ADDRESS_FOR = timedelta(days=90)
DEVICE_COOKIE_DAYS = 180
PURGE_CHANCE = 0.02  # a failure purges emptied rows this often (no job needed)
MAX_KEY = 400


@dataclass(frozen=True)
class Key:
    policy: Policy
    subject: str

    @property
    def name(self) -> str:
        return f"{self.policy.name}:{self.subject}"[:MAX_KEY]


def address_subject(client_ip: str) -> str:
    """An IPv4 address as is; an IPv6 address as its /64 (one host owns a whole /64)."""
    try:
        ip = ipaddress.ip_address(client_ip.strip())
    except ValueError:
        return client_ip.strip()[:64]
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((ip, 64), strict=False))
    return str(ip)


def password_keys(
    account: str, client_ip: str, *, known_address: bool = False, device: str | None = None
) -> list[Key]:
    """The keys of one password check. `account` names the account ("customer:<email>", lower case; an
    unknown email is throttled the same, so throttling says nothing about which emails exist). A known
    device is throttled on its own key only; a known address on its (account, address) pair only: it is
    spared the account-wide ceiling and the address-wide count (an office whose address also tries
    other accounts)."""
    account = account.strip().lower()
    if device:
        return [Key(PASSWORD_ACCOUNT_DEVICE, f"{account}|{device}")]
    address = address_subject(client_ip)
    pair = Key(PASSWORD_ACCOUNT_ADDRESS, f"{account}|{address}")
    if known_address:
        return [pair]
    return [pair, Key(PASSWORD_ADDRESS, address), Key(PASSWORD_ACCOUNT, account)]


def signup_keys(client_ip: str, per_address: int | None = None, total: int | None = None) -> list[Key]:
    """The keys of one sign-up; `per_address` / `total` (settings signup_per_address / signup_total)
    replace the bursts of SIGNUP_ADDRESS (drains that many an hour) and SIGNUP_ALL (that many per 5 min)."""
    by_address, overall = SIGNUP_ADDRESS, SIGNUP_ALL
    if per_address is not None:
        by_address = Policy(SIGNUP_ADDRESS.name, max(1, per_address), 3600 / max(1, per_address))
    if total is not None:
        overall = Policy(SIGNUP_ALL.name, max(1, total), 300 / max(1, total))
    return [Key(by_address, address_subject(client_ip)), Key(overall, "all")]


async def _levels(session: AsyncSession, keys: Sequence[Key]) -> list[tuple[Key, float]]:
    now = utcnow()
    stored = await repo.lock(session, [k.name for k in keys], now)
    out = []
    for k in keys:
        level, at = stored.get(k.name, (0.0, now))
        out.append((k, k.policy.drained(level, (now - as_utc(at)).total_seconds())))
    return out


async def check(session: AsyncSession, keys: Sequence[Key]) -> Decision:
    """May one more attempt go ahead? Locks the keys' rows for the rest of the transaction."""
    if not keys:
        return ALLOWED
    return decide([(k.name, k.policy, level) for k, level in await _levels(session, keys)])


async def record_failure(session: AsyncSession, keys: Sequence[Key]) -> None:
    """Count one event (a wrong password, a created account) on every key."""
    now = utcnow()
    for k, level in await _levels(session, keys):
        new = level + 1.0
        await repo.store(session, k.name, new, now, now + timedelta(seconds=k.policy.empty_after(new)))
    if random.random() < PURGE_CHANCE:
        await repo.purge(session, now)


async def record_success(session: AsyncSession, keys: Sequence[Key]) -> None:
    """A correct secret: empties the keys whose policy says so ((account, address), (account, device));
    the address's and the account's counts stay (a valid sign-in must not buy more guesses)."""
    now = utcnow()
    for k in keys:
        if k.policy.reset_on_success:
            await repo.store(session, k.name, 0.0, now, now)


async def known_address(session: AsyncSession, customer_id: int | None, client_ip: str) -> bool:
    """Has this customer signed in successfully from this address in the last KNOWN_ADDRESS_FOR?"""
    if customer_id is None or not client_ip:
        return False
    found = await session.execute(
        select(LoginEvent.id)
        .where(
            LoginEvent.customer_id == customer_id,
            LoginEvent.client_ip == client_ip[:45],
            LoginEvent.success == 1,
            LoginEvent.created_at >= utcnow() - KNOWN_ADDRESS_FOR,
        )
        .limit(1)
    )
    return found.first() is not None


def device_token(secret_key: str, account: str) -> str:
    """A new known-device token for a browser that just signed in to `account` (its cookie value)."""
    nonce = secrets.token_urlsafe(12)
    return f"{nonce}.{sign(secret_key, _device_message(account, nonce))}"


def device_of(secret_key: str, token: str, account: str) -> str | None:
    """The device id in `token` when it was issued for `account` by this server, else None."""
    nonce, _, signature = token.partition(".")
    if not nonce or not signature or len(token) > 200:
        return None
    return nonce if verify_signature(secret_key, _device_message(account, nonce), signature) else None


def _device_message(account: str, nonce: str) -> bytes:
    return f"device:{account.strip().lower()}:{nonce}".encode()
