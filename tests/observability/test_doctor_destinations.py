"""`proxyplane doctor` flags every relaxed destination rule (issue 30.1): loopback allowed, a private range
left out of the deny-list, a malformed deny-list, the demo origin let through; none of them: one ok line."""

from __future__ import annotations

import pytest

from proxyplane.core.gateway_settings import GatewaySettings
from proxyplane.core.settings import Settings
from proxyplane.observability.doctor import check_destinations, uncovered


def lines(gw: GatewaySettings) -> list[str]:
    return [f.line() for f in check_destinations(Settings(database_url="sqlite:///x.db"), gw)]


def test_strict_rules_are_one_ok_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PROXYPLANE_DEMO_ORIGIN", raising=False)
    (line,) = lines(GatewaySettings(dev_allow_loopback=False, deny_destinations="default,198.51.100.7/32"))
    assert line.startswith("ok   destinations") and "listen ports refused" in line


def test_every_relaxed_rule_is_a_problem(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROXYPLANE_DEMO_ORIGIN", "127.0.0.1:8090")
    found = lines(GatewaySettings(dev_allow_loopback=True, deny_destinations="10.0.0.0/8"))
    assert all(line.startswith("FIX  destinations") for line in found) and len(found) == 3
    assert "DEV_ALLOW_LOOPBACK is on" in found[0]
    assert "DENY_DESTINATIONS leaves" in found[1] and "169.254.0.0/16" in found[1]
    assert "127.0.0.1:8090" in found[2]
    monkeypatch.setenv("PROXYPLANE_DEMO_ORIGIN", "localhost:80")  # not an IP literal
    bad_list, bad_origin = lines(
        GatewaySettings(dev_allow_loopback=False, deny_destinations="default,10.0.0.300")
    )
    assert "PROXYPLANE_GATEWAY_DENY_DESTINATIONS" in bad_list and bad_list.startswith("FIX")
    assert "PROXYPLANE_DEMO_ORIGIN" in bad_origin and "not an IP literal" in bad_origin


def test_a_wider_network_covers_the_default_ranges() -> None:
    assert uncovered("default") == []
    assert uncovered("0.0.0.0/0,::/0") == []
    assert "fe80::/10" in uncovered("0.0.0.0/0")
