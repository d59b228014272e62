"""Why the gateway refused a client before relaying anything: the one list of proxy login failure reasons.

Each value is the error category the refusal is metered under (the service's usage errors when a service
is known, else the node's unattributed errors) and the label the gateway metrics use. SUSPENDED and
OVER_LIMIT keep the categories they had before the reasons were split ("inactive", "limit"); stored usage
from before also holds "auth" for what is now UNKNOWN_LOGIN / WRONG_PASSWORD / NOT_WHITELISTED."""

from __future__ import annotations

from enum import StrEnum


class AuthFailure(StrEnum):
    UNKNOWN_LOGIN = "auth_unknown_login"  # no service has this login (on this listener)
    WRONG_PASSWORD = "auth_wrong_password"  # the login is a service's, the password is not its
    NOT_WHITELISTED = "auth_not_whitelisted"  # no credentials and the client IP is on no whitelist
    SUSPENDED = "inactive"  # the service is not active (suspended, expired, pending, cancelled)
    OVER_LIMIT = "limit"  # the service's concurrent connection limit is reached
    BAD_USERNAME = "username"  # a malformed username option (login-country-xx, ...)
    SUBUSER_DISABLED = "subuser_disabled"  # the sub-user's enabled flag is off (issue 18)
    SUBUSER_TRAFFIC = "subuser_traffic_limit"  # the sub-user's traffic limit (bytes or requests) is reached
    SUBUSER_COUNTRY = "subuser_country"  # the requested country is not in the sub-user's list


# What a client is told. Unknown login and wrong password read the same, so a stranger cannot learn
# whether a login exists; the other reasons are only reached by a client that already authenticated
# (suspended, over the limit) or say nothing about anyone's account (not whitelisted).
REFUSAL_TEXT = {
    AuthFailure.UNKNOWN_LOGIN: "wrong proxy login or password",
    AuthFailure.WRONG_PASSWORD: "wrong proxy login or password",
    AuthFailure.NOT_WHITELISTED: "proxy authentication required: send the service's login and password, "
    "or whitelist this client's IP address",
    AuthFailure.SUSPENDED: "service is not active",
    AuthFailure.OVER_LIMIT: "too many concurrent connections for this service",
    AuthFailure.SUBUSER_DISABLED: "proxy sub-user is disabled",
    AuthFailure.SUBUSER_TRAFFIC: "proxy sub-user traffic limit reached",
    AuthFailure.SUBUSER_COUNTRY: "country not allowed for this proxy sub-user",
}


def not_whitelisted_text(client_ip: str) -> str:
    """The 407 text for a client without credentials on no whitelist, naming the address the gateway saw
    (the one to whitelist: behind a NAT or a VPN it is not the machine's own). Whitelists hold IPv4
    addresses, so an IPv6 client is told to connect over IPv4 or send the login and password."""
    text = REFUSAL_TEXT[AuthFailure.NOT_WHITELISTED]
    if not client_ip:
        return text
    if ":" in client_ip:
        return (
            f"{text}; this client reached the gateway from {client_ip} (IPv6): whitelists hold IPv4 "
            "addresses, so connect over IPv4 or send the login and password"
        )
    return f"{text}; this client reached the gateway from {client_ip}: whitelist that address"
