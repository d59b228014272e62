#!/usr/bin/env bash
# Install (first time) and start the whole platform on the embedded default:
# SQLite under ./.proxyplane, built-in test payment processor, gateway on 127.0.0.0/8, API + dashboard.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
# the demo origin the README's "try it" reaches through a proxy: the one loopback destination the gateway
# lets through (loopback stays closed to customers otherwise); PROXYPLANE_DEMO_ORIGIN= (empty) turns it off
export PROXYPLANE_DEMO_ORIGIN="${PROXYPLANE_DEMO_ORIGIN-127.0.0.1:8090}"
exec .venv/bin/proxyplane serve "$@"
