"""The admission checks both tunnel paths share: HTTP credential refusals and SOCKS5 request refusals."""

import pytest

from proxyplane.gateway.access import AccessTable, Grant, ServiceEntry
from proxyplane.gateway.admission import SocksRefusal, http_credentials, socks_admit
from proxyplane.gateway.context import Context, Settings
from proxyplane.gateway.limits import ConnectionLimiter
from proxyplane.gateway.metering import Meter
from proxyplane.gateway.protocol import socks5
from proxyplane.gateway.protocol.http_proxy import Credentials
from proxyplane.gateway.routing import Router


def context(*entries: ServiceEntry) -> Context:
    return Context(AccessTable(entries), Router(), ConnectionLimiter(), Meter(), Settings())


def rotating(**kw) -> ServiceEntry:
    return ServiceEntry("r1", "rotating", "rot", "pw", exit_ips={"127.0.5.1": "de"}, **kw)


def test_http_credentials_grant_or_the_refusing_reply():
    ctx = context(rotating(), ServiceEntry("off", "rotating", "off", "pw", exit_ips={"127.0.5.2": ""},
                                           active=False))
    grant = http_credentials(ctx, None, "", Credentials("rot", "pw"), "example.com")
    assert isinstance(grant, Grant) and grant.service.service_id == "r1"
    assert http_credentials(ctx, None, "", Credentials("rot", "bad"), "h").startswith(b"HTTP/1.1 407")
    assert http_credentials(ctx, None, "", Credentials("off", "pw"), "h").startswith(b"HTTP/1.1 403")
    bad_option = http_credentials(ctx, None, "", Credentials("rot-ttl-25h", "pw"), "h")
    assert isinstance(bad_option, bytes) and bad_option.startswith(b"HTTP/1.1 407") and b"ttl" in bad_option
    refused = http_credentials(ctx, None, "127.0.6.1", None, "h")
    assert isinstance(refused, bytes) and refused.startswith(b"HTTP/1.1 407")  # not whitelisted
    assert b"from 127.0.6.1: whitelist that address" in refused  # the address to whitelist (issue 30.15)
    v6 = http_credentials(ctx, None, "::1", None, "h")
    assert isinstance(v6, bytes) and b"from ::1 (IPv6): whitelists hold IPv4" in v6
    # a known login's wrong password and the inactive service count for their service; the rest has none
    assert ctx.unattributed_errors == {"auth_not_whitelisted": 2, "username": 1}
    rows = ctx.meter.drain()
    counted = {(r.service_id, e) for r in rows for e in r.errors}
    assert counted == {("r1", "auth_wrong_password"), ("off", "inactive")}


def test_socks_admit_takes_a_slot_or_refuses_taking_nothing():
    ctx = context(rotating(max_connections=1))
    grant = Grant(ctx.access.get("r1"), None)  # type: ignore[arg-type]
    assert socks_admit(ctx, grant, None, socks5.CMD_CONNECT, "127.0.0.1") == "127.0.5.1"
    with pytest.raises(SocksRefusal) as limit:
        socks_admit(ctx, grant, None, socks5.CMD_CONNECT, "127.0.0.1")
    assert (limit.value.rep, limit.value.reason) == (socks5.REP_NOT_ALLOWED, "limit")
    ctx.limiter.release("r1")
    with pytest.raises(SocksRefusal) as family:
        socks_admit(ctx, grant, None, socks5.CMD_CONNECT, "::1")
    assert family.value.rep == socks5.REP_ADDRESS_TYPE_NOT_SUPPORTED
    assert family.value.reason == "address_family"
    with pytest.raises(SocksRefusal) as udp:
        socks_admit(ctx, grant, None, socks5.CMD_UDP_ASSOCIATE, "0.0.0.0")
    assert (udp.value.reason, udp.value.host) == ("udp_not_allowed", "")
    ctx.access.upsert(rotating(active=False))  # type: ignore[attr-defined]
    with pytest.raises(SocksRefusal) as inactive:
        socks_admit(ctx, grant, None, socks5.CMD_CONNECT, "127.0.0.1")
    assert (inactive.value.reason, inactive.value.service_id) == ("inactive", None)
    assert ctx.limiter.current("r1") == 0
