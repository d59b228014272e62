"""`proxyplane admin stock import|add-range`: the bulk path behind the operator's commands."""

from __future__ import annotations

import json
from pathlib import Path

from proxyplane.domains.stock import bulk
from tests.cli.test_admin import cli  # noqa: F401  (fixture)
from tests.domains.stock.test_bulk import free_block


def test_add_range_and_import_file(cli, tmp_path: Path) -> None:  # noqa: F811
    first, cidr = free_block(8)
    code, out, err = cli(
        "admin", "stock", "add-range", "--pool", "proxy_isp", "--range", cidr, "--country", "lu"
    )
    assert code == 0, err
    assert json.loads(out) == {"added": 254, "skipped": 0}

    prefix = bulk.dotted(first).rsplit(".", 1)[0]  # the block's first three octets
    path = tmp_path / "ips.txt"
    path.write_text(f"# address maxmind [ripe]\n{prefix}.1 LU\n{prefix}.2 LU CH\n{prefix}.255 lu # new\n")
    code, out, err = cli("admin", "stock", "import", "--pool", "proxy_isp", "--file", str(path))
    assert code == 0, err
    assert json.loads(out) == {"added": 1, "skipped": 2}  # .1 and .2 are in stock, .255 is new

    code, out, _ = cli("admin", "stock", "retire", "--range", cidr)  # leave nothing on sale for others
    assert code == 0 and json.loads(out)["retired"] == 254
    code, out, _ = cli("admin", "stock", "retire", f"{prefix}.255")
    assert json.loads(out)["retired"] == 1

    path.write_text("127.0.0.1 US\nnot-an-ip US\n")
    code, _, err = cli("admin", "stock", "import", "--pool", "proxy_isp", "--file", str(path))
    assert code == 2 and "line 2" in err and "not an IPv4 address" in err
    code, _, err = cli(
        "admin", "stock", "add-range", "--pool", "proxy_isp", "--range", "127.0.0.0/7", "--country", "US"
    )
    assert code == 2 and "at most" in err
