#!/usr/bin/env bash
# The shared harness's six columns (../shared/bench/proxy, see bench/README.md) with our gateway started
# as `python -m proxyplane.gateway.standalone --workers N`: once with 1 worker, once with 2 (issue 14.3).
#
#   sudo bench/scale/workers.sh                     # 3 rounds each, ours + the direct baseline (~4 min)
#   QUICK=1 sudo bench/scale/workers.sh             # one short round each (a smoke test)
#   PEERS=squid,pproxy sudo bench/scale/workers.sh  # with some peers in both runs
#   WORKERS="1 2 4" sudo bench/scale/workers.sh     # other worker counts
#
# Pinning: with 1 worker the gateway is pinned to cpu 1 and the load generator + origin to cpu 0 (the
# harness default: one core each). With N > 1 workers the gateway may use cpus 0-(N-1) (PROXY_CPUS),
# i.e. on a 2-core machine its second worker shares cpu 0 with the load generator and the origin. Per-core
# cost (proxy CPU per request / MB / connection) is in the harness's second table. Results:
# bench/results/workers-<N>.{txt,json}.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
HARNESS="${HARNESS:-$REPO/../shared/bench/proxy}"
PY="${PY:-$REPO/.venv/bin/python}"
WORK="${BENCH_WORK:-/tmp/proxyplane-bench-workers}"
mkdir -p "$WORK"
cp -r "$HARNESS"/. "$WORK"/
chmod -R u+w "$WORK"
export OURS_HTTP_PORT="${OURS_HTTP_PORT:-9080}" OURS_SOCKS_PORT="${OURS_SOCKS_PORT:-1081}"
export OURS_HTTPS_PORT="${OURS_HTTPS_PORT:-9443}"
export OURS_CWD="$REPO"
export PEERS="${PEERS:-none}"  # no peer is called "none": ours and the direct baseline only
export OUT_DIR="${OUT_DIR:-$REPO/bench/results}"
mkdir -p "$OUT_DIR"
[[ "${QUICK:-0}" == 0 ]] && unset QUICK
cd "$WORK"
for n in ${WORKERS:-1 2}; do
    cpus="1"
    if (( n > 1 )); then cpus="$(seq -s, 0 $(( n - 1 )))"; fi
    echo "== --workers $n (gateway on cpus $cpus)" >&2
    OURS_NAME="workers-$n" OUT_NAME="${OUT_PREFIX:-workers}-$n" PROXY_CPUS="${PROXY_CPUS:-$cpus}" \
    OURS_CMD="exec $PY -m proxyplane.gateway.standalone --workers $n --listen \"\$OURS_HOST\" \
      --http-port \"\$OURS_HTTP_PORT\" --socks-port \"\$OURS_SOCKS_PORT\" --https-port \"\$OURS_HTTPS_PORT\" \
      --tls-cert \"\$BENCH_TLS_CERT\" --tls-key \"\$BENCH_TLS_KEY\" \
      --login \"\$BENCH_USER\" --password \"\$BENCH_PASS\" --exit-ip \"\$BENCH_EXIT_IP\"" \
      ./run.sh "$@"
done
