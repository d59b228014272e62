"""`proxyplane admin stock add-prefix|prefixes|retire-prefix` (issue 16): one row per prefix, subnets
counted, bad prefixes refused."""

from __future__ import annotations

import ipaddress
import json

from tests.cli.test_admin import cli  # noqa: F401  (fixture)
from tests.domains.stock.subnet_support import random_prefix


def test_add_list_retire_prefix(cli) -> None:  # noqa: F811
    prefix = random_prefix(48)
    code, out, err = cli(
        "admin", "stock", "add-prefix", "--prefix", prefix, "--country", "ro", "--ripe-country", "md"
    )
    assert code == 0, err
    added = json.loads(out)
    assert added == {
        "prefix": prefix,
        "subnet_len": 64,
        "subnets": 65_536,
        "country_maxmind": "RO",
        "country_ripe": "MD",
        "added": True,
    }
    code, out, _ = cli("admin", "stock", "add-prefix", "--prefix", prefix, "--country", "RO")
    assert code == 0 and json.loads(out)["added"] is False  # already in stock: left as it is
    code, out, _ = cli("admin", "stock", "prefixes")
    row = next(p for p in json.loads(out)["prefixes"] if p["prefix"] == prefix)
    assert (row["subnets"], row["used"], row["free"], row["retired"]) == (65_536, 0, 65_536, False)

    inner = str(next(ipaddress.IPv6Network(prefix).subnets(new_prefix=56)))  # inside the one just added
    code, _, err = cli("admin", "stock", "add-prefix", "--prefix", inner, "--country", "RO")
    assert code != 0 and "overlaps" in err
    code, _, err = cli(
        "admin", "stock", "add-prefix", "--prefix", prefix, "--country", "RO", "--subnet-len", "40"
    )
    assert code != 0
    code, _, err = cli("admin", "stock", "add-prefix", "--prefix", "127.0.0.0/8", "--country", "RO")
    assert code != 0 and "IPv6" in err

    code, out, _ = cli("admin", "stock", "retire-prefix", prefix)
    assert code == 0 and json.loads(out) == {"retired": 1}
    code, out, _ = cli("admin", "stock", "prefixes")
    assert next(p for p in json.loads(out)["prefixes"] if p["prefix"] == prefix)["retired"] is True
