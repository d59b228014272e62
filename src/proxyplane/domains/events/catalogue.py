"""Every event type a customer can subscribe to (listed live by GET /customer/webhooks/events)."""

from __future__ import annotations

EVENT_TYPES: dict[str, str] = {
    "order.created": "An order was placed (before payment completes when a checkout remainder is due).",
    "order.paid": "An order was paid in full and its service is being provisioned.",
    "service.activated": "A service became active: its proxies are usable.",
    "service.renewed": "A service was renewed for another term.",
    "service.renewal_failed": "An automatic renewal could not be paid (for example insufficient balance).",
    "service.suspended": "A service was suspended.",
    "service.expiring_soon": "A service ends soon and will not renew automatically.",
    "service.expired": "A service reached the end of its term and stopped.",
    "service.cancelled": "A service was cancelled (with any pro-rata refund in the payload).",
    "service.ips_added": "IPs were added to a service.",
    "service.ips_replaced": "IPs of a service were refreshed; the payload carries old and new IPs.",
    "subuser.usage_80": "A sub-user used 80 % of its traffic limit (bytes or requests).",
    "subuser.usage_100": "A sub-user reached its traffic limit and is refused until the limit is raised.",
    "service.quota_80": "A service used 80 % of its traffic or request quota for the current period.",
    "service.quota_100": "A service used up its quota for the period and is refused until traffic is added.",
    "addon.activated": "An add-on was purchased and is active.",
    "addon.cancelled": "An add-on was cancelled.",
    "wallet.credited": "The wallet was credited (confirmed top-up, refund or adjustment).",
    "wallet.balance_low": "A debit took the wallet balance below the customer's threshold.",
    "deposit.failed": "A top-up failed at the payment processor; nothing was credited.",
    "ticket.replied": "Support replied to one of your tickets.",
    "api_key.created": "An API key was created (the secret is never sent).",
    "api_key.revoked": "An API key was revoked.",
    "member.joined": "Someone accepted an invitation and now acts on the account with a role (issue 34.5).",
    "member.role_changed": "A team member was given another role; their API keys keep only what it allows.",
    "member.removed": "A team member was removed: their sessions on the account ended, their keys stopped.",
    "member.left": "A team member left the account by themselves; their API keys on it stopped working.",
    "account.handed_over": "The account was handed over to a team member, who now holds it.",
    "webhook_endpoint.disabled": "A webhook endpoint kept failing and was disabled.",
    "webhook.test": "A test event sent on request to one endpoint.",
}


def describe() -> list[dict[str, str]]:
    return [{"type": name, "description": text} for name, text in EVENT_TYPES.items()]
