"""Sub-users in the access table and the admission checks, without sockets (issue 18.2): a static service's
sub-user on its listen IPs only, whitelist as a sub-user, the traffic limit from this node's unflushed
counts, the connection limit of the sub-user and of the service (the sum), and an update that replaces
the service's sub-users."""

from __future__ import annotations

import pytest

from proxyplane.gateway.access import AccessTable, AuthError, ServiceEntry, authenticate
from proxyplane.gateway.admission import release_slot, take_slot
from proxyplane.gateway.context import Context, Settings
from proxyplane.gateway.limits import ConnectionLimiter
from proxyplane.gateway.metering import Meter
from proxyplane.gateway.routing import Router
from proxyplane.gateway.subusers import SubuserEntry

SID = "00000000-0000-0000-0000-0000000000aa"


def service(*subs: SubuserEntry, kind: str = "static", max_connections: int = 3) -> ServiceEntry:
    exits = {"127.0.3.1": "de"} if kind == "static" else {"127.0.3.1": "de", "127.0.3.2": "us"}
    return ServiceEntry(SID, kind, "owner", "owner-pw", exits, max_connections=max_connections,  # type: ignore[arg-type]
                        subusers=subs)


def sub(pk: int, **kw) -> SubuserEntry:
    return SubuserEntry(pk, f"public-{pk}", f"sub{pk}", f"pw{pk}", **kw)


def context(table: AccessTable) -> Context:
    return Context(table, Router(), ConnectionLimiter(), Meter(), Settings())


def test_static_subuser_on_its_service_listen_ips_and_whitelist() -> None:
    table = AccessTable([service(sub(1, whitelist=frozenset({"127.0.4.9"})))])
    grant = authenticate(table, "127.0.3.1", "", "sub1", "pw1")
    assert grant.service.service_id == f"{SID}/1" and grant.service.parent is not None
    assert grant.service.exit_ips == {"127.0.3.1": "de"}
    with pytest.raises(AuthError):
        authenticate(table, "127.0.3.7", "", "sub1", "pw1")  # not this service's IP
    with pytest.raises(AuthError):
        authenticate(table, "127.0.3.1", "", "sub1", "wrong")
    assert authenticate(table, "127.0.3.1", "127.0.4.9", None, None).service.service_id == f"{SID}/1"
    assert authenticate(table, "127.0.3.1", "", "owner", "owner-pw").service.service_id == SID
    # an update of the service replaces its sub-users: the old login is gone, the new one works
    table.upsert(service(sub(2)))
    with pytest.raises(AuthError):
        authenticate(table, "127.0.3.1", "", "sub1", "pw1")
    assert table.get(f"{SID}/1") is None
    assert authenticate(table, "127.0.3.1", "", "sub2", "pw2").service.service_id == f"{SID}/2"


def test_traffic_limit_counts_what_this_node_metered_since_the_entry_was_loaded() -> None:
    table = AccessTable([service(sub(1, limit_bytes=1_000, used_bytes=600), kind="rotating")])
    ctx = context(table)
    assert authenticate(table, None, "", "sub1", "pw1").service.service_id == f"{SID}/1"
    ctx.meter.record(f"{SID}/1", "a.example", requests=1, bytes_down=399)
    authenticate(table, None, "", "sub1", "pw1")  # 999 < 1000
    ctx.meter.record(f"{SID}/1", "a.example", requests=1, bytes_down=1)
    with pytest.raises(AuthError) as exc:
        authenticate(table, None, "", "sub1", "pw1")
    assert exc.value.reason == "subuser_traffic_limit" and exc.value.service_id == f"{SID}/1"
    # the owner's login is not limited by its sub-user
    assert authenticate(table, None, "", "owner", "owner-pw").service.service_id == SID
    # a reload after a flush brings used_bytes from the store: what was flushed before is not counted twice
    ctx.meter.sub_counts[f"{SID}/1"][2] += 400  # flushed
    table.upsert(service(sub(1, limit_bytes=1_300, used_bytes=1_000), kind="rotating"))
    authenticate(table, None, "", "sub1", "pw1")  # 1000 + 0 unflushed < 1300 (not 1000 + 400)
    ctx.meter.record(f"{SID}/1", "a.example", requests=1, bytes_down=300)
    with pytest.raises(AuthError):
        authenticate(table, None, "", "sub1", "pw1")  # 1000 + 300 since the reload


def test_country_list_filters_exits_and_refuses_other_countries() -> None:
    table = AccessTable([service(sub(1, countries=frozenset({"us"})), kind="rotating")])
    grant = authenticate(table, None, "", "sub1", "pw1")
    assert dict(grant.service.exit_ips) == {"127.0.3.2": "us"}
    assert authenticate(table, None, "", "sub1-country-us", "pw1").service.service_id == f"{SID}/1"
    with pytest.raises(AuthError) as exc:
        authenticate(table, None, "", "sub1-country-de", "pw1")
    assert exc.value.reason == "subuser_country"


def test_connection_limits_of_the_subuser_and_of_the_service_sum() -> None:
    table = AccessTable([service(sub(1, max_connections=1), sub(2), max_connections=2)])
    ctx = context(table)
    one, two = table.get(f"{SID}/1"), table.get(f"{SID}/2")
    assert one is not None and two is not None
    assert take_slot(ctx, one) is None
    assert take_slot(ctx, one) == "limit"  # its own limit
    assert take_slot(ctx, two) is None
    assert take_slot(ctx, two) == "limit"  # the service's 2 are taken by its sub-users
    release_slot(ctx, one.service_id)
    assert ctx.limiter.current(SID) == 1 and ctx.limiter.current(one.service_id) == 0
    assert take_slot(ctx, two) is None
