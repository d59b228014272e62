"""The official MCP TypeScript SDK under Node as a client of /api/v1/mcp on a real loopback port (issue
21.1), in both protocol eras: `@modelcontextprotocol/sdk` 1.32.2 (2025-11-25 handshake) and
`@modelcontextprotocol/client` 2.4.0 pinned to 2026-07-28 (`server/discover`, stateless core) each list
the tools and quote. The Node project is tests/mcp_ts (installed by scripts/install.sh: `npm ci`)."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest

from proxyplane.platform import Platform
from tests.adapters.mcp.test_loopback import serve
from tests.adapters.mcp.test_orders import MIX
from tests.support import Account

pytestmark = pytest.mark.anyio
PROJECT = Path(__file__).resolve().parents[2] / "mcp_ts"  # not tests/mcp: a dir named mcp shadows the SDK
NODE = shutil.which("node")


@pytest.mark.skipif(NODE is None, reason="node is not installed: the TypeScript SDK client test needs Node")
async def test_typescript_sdk_lists_tools_and_quotes_in_both_eras(
    platform: Platform, account: Account
) -> None:
    assert NODE is not None
    installed = PROJECT / "node_modules" / "@modelcontextprotocol"
    assert (installed / "sdk").is_dir() and (installed / "client").is_dir(), (
        "tests/mcp_ts is not installed: run scripts/install.sh (npm ci)"
    )
    key = await account.key({"catalog:read"})
    async with serve(platform) as base:
        proc = await asyncio.create_subprocess_exec(
            NODE,
            str(PROJECT / "client.mjs"),
            json.dumps(MIX),
            cwd=PROJECT,
            env={"MCP_URL": f"{base}/api/v1/mcp", "MCP_KEY": key, "PATH": "/usr/bin:/bin"},
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(proc.communicate(), timeout=60)
    assert proc.returncode == 0, err.decode()
    seen = json.loads(out.decode().strip().splitlines()[-1])
    legacy, modern = seen["legacy"], seen["modern"]
    assert modern["era"] == "modern" and modern["version"] == "2026-07-28"
    for era in (legacy, modern):
        assert era["server"]["name"] == "proxyplane"
        assert {"quote_composite", "order_composite", "whoami"} <= set(era["tools"])
        assert era["quote_error"] is False and era["quote"]["total_cents"] > 0
    assert modern["quote"] == legacy["quote"]
