#!/usr/bin/env bash
# Install (first time) and start the whole platform on the embedded default:
# SQLite under ./.proxyplane, built-in test payment processor, gateway on 127.0.0.0/8, API + dashboard.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
exec .venv/bin/proxyplane serve "$@"
