"""Service quotas in the gateway (issue 32), enforced by the sub-user traffic-limit machinery (subusers.py).

A service whose plan meters traffic carries a ``QuotaEntry`` (``ServiceEntry.quota``, loaded with the
service from service_quotas; its sub-users' derived entries carry the same object: their traffic counts
for the service). It has the attributes of a sub-user's limits (``subusers.over_traffic`` reads both):
the store's ``limit_reached`` (set by the usage flush: domains/quotas/metering.py), or the used totals
loaded with the entry plus what this node counted since (``Meter.sub_counts`` under the service id: the
access table registers the key when it indexes the entry, and the meter then counts the service's rows
and its sub-users' there) reaching the byte or request limit. A service over its quota is refused
(``refusal``: HTTP 402 with ``Proxy-Status: ...; error=quota_exhausted``, SOCKS5 the failed-auth reply;
metered as ``quota_exhausted``) and its open tunnels are ended by ``subusers.cut_refused`` after every
harvest of the meter, as a sub-user's are.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .access import ServiceEntry
    from .subusers import SubCounts

QUOTA_EXHAUSTED = "quota_exhausted"  # the error category and the Proxy-Status error
QUOTA_TEXT = (
    "quota_exhausted: this service's traffic quota for the current period is used up; buy more traffic "
    "(add_traffic: POST /v1/customer/services/{id}/traffic, the dashboard's service page or the MCP tool "
    "add_traffic) or wait for the period to reset"
)


INSUFFICIENT_BALANCE = "insufficient_balance"  # a pay-as-you-go service the wallet cannot pay for
BALANCE_TEXT = (
    "insufficient_balance: this pay-as-you-go service's wallet cannot pay for the next unit of traffic; "
    "top up the wallet (POST /v1/customer/wallet/deposit/init or the dashboard's wallet page) and it serves "
    "again"
)


@dataclass(slots=True)
class QuotaEntry:
    """A service's quota as loaded from the store (immutable by convention, like ServiceEntry)."""

    key: str  # the service id: its counters in SubCounts
    limit_bytes: int | None  # the plan's quota + traffic bought this period; None: bytes not metered
    limit_requests: int | None
    used_bytes: int = 0
    used_requests: int = 0
    limit_reached: bool = False
    baseline: tuple[int, int] = (0, 0)  # this node's flushed (bytes, requests) when the entry was indexed
    payg: bool = False  # pay as you go: the limit is what the wallet covers (domains/quotas/payg.py)


def track(quota: QuotaEntry, counts: SubCounts) -> None:
    """Register the service's counters (the meter counts keys present in ``counts``) and take its
    baseline: what this node flushed before the totals in ``quota`` were loaded."""
    seen = counts.get(quota.key)
    if seen is None:
        counts[quota.key] = [0, 0, 0, 0]
        quota.baseline = (0, 0)
    else:
        quota.baseline = (seen[2], seen[3])


def refused(entry: ServiceEntry, counts: SubCounts) -> bool:
    """True when the entry's service (a sub-user's: its service's) has used up its quota."""
    from .subusers import over_traffic

    quota = entry.quota
    return quota is not None and over_traffic(quota, counts, quota.key)


def reason(entry: ServiceEntry) -> str:
    """The refusal of a service over its limit: ``insufficient_balance`` (pay as you go) or
    ``quota_exhausted``."""
    return INSUFFICIENT_BALANCE if entry.quota is not None and entry.quota.payg else QUOTA_EXHAUSTED


def text(reason_: str) -> str:
    return BALANCE_TEXT if reason_ == INSUFFICIENT_BALANCE else QUOTA_TEXT


def proxy_status(error: str, details: str) -> tuple[str, str]:
    """A Proxy-Status header (RFC 9209) naming the error."""
    return ("Proxy-Status", f'proxyplane; error={error}; details="{details}"')
