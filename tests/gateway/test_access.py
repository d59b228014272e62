"""The access table's lookups: credentials, whitelist precedence, inactive services."""

import pytest

from proxyplane.gateway.access import AccessTable, AuthError, ServiceEntry, authenticate


def entry(sid: str, *, active: bool = True, kind: str = "static", login: str = "") -> ServiceEntry:
    return ServiceEntry(sid, kind, login or f"user-{sid}", "pw", exit_ips={"127.0.3.1": "de"},  # type: ignore[arg-type]
                        whitelist=frozenset({"127.0.4.1"}), active=active)


@pytest.mark.parametrize("kind", ["static", "rotating"])
def test_an_inactive_service_never_shadows_a_live_one_on_the_whitelist(kind):
    listen = "127.0.3.1" if kind == "static" else None
    table = AccessTable([entry("a-suspended", active=False, kind=kind), entry("b-live", kind=kind)])
    grant = authenticate(table, listen, "127.0.4.1", None, None)
    assert grant.service.service_id == "b-live"
    table.upsert(entry("b-live", active=False, kind=kind))  # both inactive now: refused as inactive
    with pytest.raises(AuthError) as exc:
        authenticate(table, listen, "127.0.4.1", None, None)
    assert exc.value.reason == "inactive"


def test_among_live_services_the_lowest_id_wins_and_credentials_decide():
    table = AccessTable([entry("b"), entry("a")])
    assert authenticate(table, "127.0.3.1", "127.0.4.1", None, None).service.service_id == "a"
    assert authenticate(table, "127.0.3.1", "", "user-b", "pw").service.service_id == "b"
    with pytest.raises(AuthError):
        authenticate(table, "127.0.3.1", "", "user-b", "wrong")
    with pytest.raises(AuthError):
        authenticate(table, "127.0.3.1", "127.0.4.2", None, None)  # not whitelisted
