#!/usr/bin/env bash
# Create .venv (Python >= 3.11) and install ProxyPlane with its dev tools into it. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
if ! "$PY" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' 2>/dev/null; then
  echo "ProxyPlane needs Python >= 3.11 (set PYTHON=/path/to/python3.11)" >&2; exit 1
fi
if [ ! -x .venv/bin/python ]; then
  if ! "$PY" -m venv .venv 2>/dev/null; then
    rm -rf .venv
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
      echo "installing python3-venv (Debian) ..."
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
      "$PY" -m venv .venv
    else
      echo "python venv module missing: install python3-venv" >&2; exit 1
    fi
  fi
fi
stamp=.venv/.installed
# the C tunnel engine (src/proxyplane/gateway/csrc/) is compiled by this install: redo it when it changes
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ] || [ setup.py -nt "$stamp" ] \
   || [ -n "$(find src/proxyplane/gateway/csrc -newer "$stamp" 2>/dev/null)" ]; then
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -e '.[dev]'
  touch "$stamp"
fi
# the official MCP TypeScript SDK for the Node client test (tests/mcp_ts; the test skips when node is absent)
if command -v npm >/dev/null && [ ! -d tests/mcp_ts/node_modules/@modelcontextprotocol/client ]; then
  CI=true npm ci --prefix tests/mcp_ts --no-audit --no-fund --loglevel=error </dev/null
fi
