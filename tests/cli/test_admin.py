"""The operator CLI: `proxyplane admin ...` against the test database."""

import json

import pytest
from click.testing import CliRunner

from proxyplane.cli import main
from proxyplane.core.settings import get_settings
from tests.support import unique_email


@pytest.fixture
def cli(database_url: str, tmp_path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("PROXYPLANE_DATABASE_URL", database_url)
    monkeypatch.setenv("PROXYPLANE_HOME", str(tmp_path))
    get_settings.cache_clear()
    runner = CliRunner()

    def call(*args: str) -> tuple[int, str, str]:
        r = runner.invoke(main, list(args))
        return r.exit_code, r.stdout, r.stderr

    yield call
    get_settings.cache_clear()


def test_customer_key_wallet_kyc_discount(cli) -> None:
    email = unique_email()
    code, out, _ = cli(
        "admin", "customer", "create", "--email", email, "--password", "s3cret-pass", "--name", "Ana"
    )
    assert code == 0 and json.loads(out)["email"] == email
    code, out, _ = cli(
        "admin", "key", "create", "--email", email, "--name", "ops", "--scopes", "wallet:read,usage:read"
    )
    key = json.loads(out)
    assert code == 0 and key["secret"].startswith("ppk_") and key["scopes"] == ["usage:read", "wallet:read"]
    code, out, _ = cli(
        "admin", "wallet", "credit", "--email", email, "--cents", "1500", "--reason", "welcome"
    )
    assert code == 0 and json.loads(out)["balance_cents"] == 1500
    code, out, _ = cli("admin", "wallet", "debit", "--email", email, "--cents", "500", "--reason", "fix")
    assert code == 0 and json.loads(out)["balance_cents"] == 1000
    code, out, err = cli(
        "admin", "wallet", "debit", "--email", email, "--cents", "5000", "--reason", "too much"
    )
    assert code != 0 and "insufficient balance" in err
    code, out, _ = cli("admin", "kyc", "approve", "--email", email)
    assert code == 0 and json.loads(out)["kyc_verified"] is True
    code, out, _ = cli("admin", "partner-discount", "set", "--email", email, "--percent", "15")
    assert code == 0 and json.loads(out)["partner_discount_percent"] == 15
    code, out, _ = cli("admin", "customer", "show", "--email", email)
    assert json.loads(out)["balance_cents"] == 1000


@pytest.mark.parametrize(
    "args",
    [
        ("admin", "wallet", "credit", "--email", "nobody@example.com", "--cents", "100", "--reason", "x"),
        ("admin", "wallet", "credit", "--email", "EMAIL", "--cents", "-100", "--reason", "x"),
        ("admin", "wallet", "credit", "--email", "EMAIL", "--cents", "0", "--reason", "x"),
        ("admin", "key", "create", "--email", "EMAIL", "--name", "k", "--scopes", "root"),
        ("admin", "partner-discount", "set", "--email", "EMAIL", "--percent", "150"),
        ("admin", "customer", "create", "--email", "not-an-email", "--password", "longenough"),
        ("admin", "customer", "create", "--email", "EMAIL", "--password", "longenough"),
        ("admin", "customer", "create", "--email", "a@example.com", "--password", "short"),
    ],
)
def test_bad_input_exits_non_zero_with_one_line(cli, args: tuple[str, ...]) -> None:
    email = unique_email()
    assert cli("admin", "customer", "create", "--email", email, "--password", "s3cret-pass")[0] == 0
    code, out, err = cli(*[email if a == "EMAIL" else a for a in args])
    assert code != 0
    assert err.strip().startswith("error:") and len(err.strip().splitlines()) == 1
