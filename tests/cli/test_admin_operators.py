"""`proxyplane admin operator ...` (issue 33): the first owner with a one-time password, the last owner
kept, any operator operation by name, every CLI action in the audit log as actor "cli"."""

import json

from tests.cli.test_admin import cli  # noqa: F401  (fixture)
from tests.domains.operators.helpers import unique_operator_email
from tests.support import unique_email


def test_create_operator_and_call_operations_audited_as_cli(cli) -> None:  # noqa: F811
    email = unique_operator_email()
    code, out, _ = cli("admin", "operator", "create", "--email", email, "--role", "owner")
    assert code == 0, out
    made = json.loads(out)
    assert made["role"] == "owner" and len(made["one_time_password"]) >= 12
    assert made["sign_in_url"].endswith("/admin/login") and made["totp_enrolled"] is False
    code, out, err = cli("admin", "operator", "create", "--email", email, "--role", "admin")
    assert code == 2 and "exists" in err
    customer = unique_email()
    assert cli("admin", "customer", "create", "--email", customer, "--password", "pw-123456789")[0] == 0
    code, out, _ = cli(
        "admin", "operator", "call", "operator_customer_search", "--input", json.dumps({"query": customer})
    )
    assert code == 0 and [c["email"] for c in json.loads(out)["customers"]] == [customer]
    code, out, _ = cli(
        "admin", "operator", "call", "operator_audit_list", "--input", json.dumps({"target": customer})
    )
    entries = json.loads(out)["entries"]
    assert entries and entries[0]["actor"] == "cli" and entries[0]["action"] == "operator_create_customer"
    assert entries[0]["detail"]["password"] == "***"
    code, _, err = cli("admin", "operator", "call", "operator_nothing")
    assert code == 2 and "no operator operation" in err


def test_reseller_commands(cli) -> None:  # noqa: F811
    """`proxyplane admin reseller create|credit|wallet|list` (issue 33.4)."""
    email = unique_operator_email()
    code, out, _ = cli("admin", "reseller", "create", "--email", email, "--discount", "30")
    assert code == 0, out
    made = json.loads(out)
    assert made["role"] == "reseller" and made["discount_percent"] == 30 and made["one_time_password"]
    assert cli("admin", "reseller", "create", "--email", unique_operator_email(), "--discount", "95")[0] == 2
    code, out, _ = cli(
        "admin", "reseller", "credit", "--email", email, "--cents", "1234", "--reason", "inv 1"
    )
    assert code == 0 and json.loads(out)["balance_cents"] == 1234
    code, out, _ = cli("admin", "reseller", "wallet", "--email", email)
    wallet = json.loads(out)
    assert wallet["balance_cents"] == 1234 and [e["kind"] for e in wallet["ledger"]] == ["deposit"]
    code, out, _ = cli("admin", "reseller", "list")
    assert email in [r["operator_email"] for r in json.loads(out)["resellers"]]
    code, _, err = cli(
        "admin", "operator", "create", "--email", unique_operator_email(), "--role", "reseller"
    )
    assert code == 2 and "operator_reseller_create" in err
