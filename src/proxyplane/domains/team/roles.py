"""The roles of a team account (issue 34.5) mapped onto the API-key scopes (core/scopes.py); the table is
in docs/decisions/team-accounts.md. A member acts with exactly their role's scopes (dashboard), and the
keys a member creates can hold no more."""

from __future__ import annotations

from proxyplane.core.scopes import ALL_SCOPES, Scope

READS = frozenset(
    {
        Scope.catalog_read,
        Scope.services_read,
        Scope.usage_read,
        Scope.wallet_read,
        Scope.tickets_read,
        Scope.customer_read,
    }
)
ROLE_SCOPES: dict[str, frozenset[str]] = {
    "owner": ALL_SCOPES,
    "admin": ALL_SCOPES,
    "billing": frozenset(
        READS | {Scope.wallet_deposit, Scope.wallet_spend, Scope.services_write, Scope.tickets_write}
    ),
    "developer": frozenset(
        READS | {Scope.services_write, Scope.tickets_write, Scope.customer_write, Scope.webhooks}
    ),
    "viewer": READS,
}
ROLES = tuple(ROLE_SCOPES)  # owner, admin, billing, developer, viewer
MANAGERS = frozenset({"owner", "admin"})  # may invite, change and remove members
SPENDING = Scope.wallet_spend.value  # a role without it runs no operation that spends money


def scopes_of(role: str) -> frozenset[str]:
    return frozenset(str(s) for s in ROLE_SCOPES.get(role, frozenset()))


def may_grant(manager_role: str, role: str) -> bool:
    """An owner grants any role; an admin any but owner."""
    return manager_role == "owner" or (manager_role == "admin" and role != "owner")


# the account's email notifications (domains/mail/notify.KINDS) each member receives by role, besides the
# account's own address, which gets every kind; each member turns kinds off in their own settings (the
# unsubscribe link of such a mail is theirs). Sign-ins are the person's own, never the account's.
_MONEY = frozenset({"order_paid", "service_expiring", "renewal_failed", "balance_low"})
_TECH = frozenset({"service_expiring", "usage_limit", "api_key_created", "ticket_replied"})
ROLE_KINDS: dict[str, frozenset[str]] = {
    "owner": _MONEY | _TECH,
    "admin": _MONEY | _TECH,
    "billing": _MONEY,
    "developer": _TECH,
    "viewer": frozenset(),
}


def kinds_of(role: str) -> frozenset[str]:
    return ROLE_KINDS.get(role, frozenset())
