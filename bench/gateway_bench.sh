#!/usr/bin/env bash
# Run the shared forward-proxy harness (../shared/bench/proxy) with our gateway plugged in as "ours",
# side by side with squid, tinyproxy, pproxy, dante and microsocks. Needs root (see the harness README).
#
#   bench/gateway_bench.sh            # QUICK=1 (one short round) unless QUICK=0 is given
#   QUICK=0 bench/gateway_bench.sh    # the full 3-round run
#   PEERS=squid,dante bench/gateway_bench.sh
#
# The harness directory may be read-only: it is copied to a temp dir (its .venv for pproxy is created
# there). Our gateway runs as a rotating service on $OURS_HOST whose only exit IP is $BENCH_EXIT_IP.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
HARNESS="${HARNESS:-$REPO/../shared/bench/proxy}"
PY="${PY:-$REPO/.venv/bin/python}"
WORK="${BENCH_WORK:-/tmp/proxyplane-bench-harness}"
mkdir -p "$WORK"
cp -r "$HARNESS"/. "$WORK"/
chmod -R u+w "$WORK"
export OURS_NAME="${OURS_NAME:-proxyplane}"
export OURS_HTTP_PORT="${OURS_HTTP_PORT:-9080}" OURS_SOCKS_PORT="${OURS_SOCKS_PORT:-1081}"
export OURS_HTTPS_PORT="${OURS_HTTPS_PORT:-9443}"
export OURS_CWD="$REPO"
export OURS_CMD="exec $PY -m proxyplane.gateway.standalone --listen \"\$OURS_HOST\" \
  --http-port \"\$OURS_HTTP_PORT\" --socks-port \"\$OURS_SOCKS_PORT\" --https-port \"\$OURS_HTTPS_PORT\" \
  --tls-cert \"\$BENCH_TLS_CERT\" --tls-key \"\$BENCH_TLS_KEY\" \
  --login \"\$BENCH_USER\" --password \"\$BENCH_PASS\" --exit-ip \"\$BENCH_EXIT_IP\""
export QUICK="${QUICK:-1}"
[[ "$QUICK" == 0 ]] && unset QUICK
export OUT_DIR="${OUT_DIR:-$REPO/bench/results}"
mkdir -p "$OUT_DIR"
cd "$WORK"
exec ./run.sh "$@"
